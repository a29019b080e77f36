package nexmark

import (
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q1 converts every bid's price from dollars to euros.
//
//	SELECT auction, bidder, 0.908 * price as price, `dateTime`, extra FROM bid;
//
// The sink declares price DECIMAL(23, 3): 0.908 * price is computed
// exactly in integers (dec3, price·908 thousandths, with no overflow for
// any BIGINT price) and printed as Flink prints a DECIMAL of scale 3,
// plainly with exactly three decimals: 908.000, 1234.567, -0.908, 0.000.
func init() {
	register(&Query{
		Name:    "q1",
		Columns: []string{"auction", "bidder", "price", "dateTime", "extra"},
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			Sink(weir.Map(Bids(events), func(b nexmark.Bid) q1Row {
				return q1Row{b.Auction, b.Bidder, euros(b.Price), b.DateTime, b.Extra}
			}).Name("q1").UID("q1"), p)
			return nil
		},
		Reference: q1Ref,
	})
}

type q1Row struct {
	Auction, Bidder int64
	Price           dec3
	DateTime        int64
	Extra           string
}

func (r q1Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Auction, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Bidder, 10)
	dst = append(dst, ',')
	dst = r.Price.append(dst)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.DateTime, 10)
	dst = append(dst, ',')
	return nexmark.AppendField(dst, r.Extra)
}

// dec3 is an exact decimal with three fractional digits, Int + Frac/1000.
// Int and Frac never have opposite signs; |Frac| < 1000. Two fields
// rather than one count of thousandths so that every BIGINT times 0.908
// fits (as in Flink's DECIMAL(23, 3), wider than a BIGINT).
type dec3 struct {
	Int  int64
	Frac int16
}

// euros is 0.908 * price, exactly: price = a·1000 + b (b with the sign of
// price, |b| < 1000), so price·0.908 = a·908 + b·908/1000, where a·908
// cannot overflow (|a| ≤ 2⁶³/1000) and b·908 is small.
func euros(price int64) dec3 {
	a, b := price/1000, price%1000
	m := b * 908
	return dec3{Int: a*908 + m/1000, Frac: int16(m % 1000)}
}

// cmpInt compares d with the integer n: -1, 0 or +1.
func (d dec3) cmpInt(n int64) int {
	switch {
	case d.Int < n:
		return -1
	case d.Int > n:
		return 1
	case d.Frac < 0:
		return -1
	case d.Frac > 0:
		return 1
	}
	return 0
}

// append prints d as Flink prints a DECIMAL of scale 3
// (BigDecimal.toPlainString): an optional minus sign, the integer part,
// a point and exactly three digits.
func (d dec3) append(dst []byte) []byte {
	i, f := d.Int, int64(d.Frac)
	if i < 0 || f < 0 {
		dst = append(dst, '-')
		f = -f
		if i < 0 {
			// uint64(-i) is |i| even for math.MinInt64.
			dst = strconv.AppendUint(dst, uint64(-i), 10)
		} else {
			dst = append(dst, '0')
		}
	} else {
		dst = strconv.AppendInt(dst, i, 10)
	}
	return append(dst, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}
