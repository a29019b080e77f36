package nexmark

import (
	"strconv"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q14 converts the bid time into a type and keeps the bids in a price
// range, with a user-defined function.
//
//	SELECT auction, bidder, 0.908 * price as price,
//	    CASE
//	        WHEN HOUR(`dateTime`) >= 8 AND HOUR(`dateTime`) <= 18 THEN 'dayTime'
//	        WHEN HOUR(`dateTime`) <= 6 OR HOUR(`dateTime`) >= 20 THEN 'nightTime'
//	        ELSE 'otherTime'
//	    END AS bidTimeType,
//	    `dateTime`, extra, count_char(extra, 'c') AS c_counts
//	FROM bid
//	WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
//
// price is the exact DECIMAL(23, 3) of q1 (dec3), printed with three
// decimals, and the WHERE compares it exactly (1000000.000 itself is out).
// HOUR is the UTC hour of dateTime (a TIMESTAMP(3) from epoch ms): hours
// 7 and 19 are 'otherTime'. count_char is nexmark's CountChar UDF: the
// number of bytes of extra's UTF-8 encoding equal to 'c'.
func init() {
	register(&Query{
		Name:    "q14",
		Columns: []string{"auction", "bidder", "price", "bidTimeType", "dateTime", "extra", "c_counts"},
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			Sink(weir.FlatMap(Bids(events), func(b nexmark.Bid, out *weir.Collector[q14Row]) error {
				if r, ok := q14Of(&b); ok {
					out.Collect(r)
				}
				return nil
			}).Name("q14").UID("q14"), p)
			return nil
		},
		Reference: q14Ref,
	})
}

type q14Row struct {
	Auction, Bidder int64
	Price           dec3
	BidTimeType     string
	DateTime        int64
	Extra           string
	CCounts         int64
}

func (r q14Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Auction, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Bidder, 10)
	dst = append(dst, ',')
	dst = r.Price.append(dst)
	dst = append(dst, ',')
	dst = append(dst, r.BidTimeType...)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.DateTime, 10)
	dst = append(dst, ',')
	dst = nexmark.AppendField(dst, r.Extra)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, r.CCounts, 10)
}

// q14Of is q14's projection of b and whether the WHERE keeps it.
func q14Of(b *nexmark.Bid) (q14Row, bool) {
	price := euros(b.Price)
	if price.cmpInt(1_000_000) <= 0 || price.cmpInt(50_000_000) >= 0 {
		return q14Row{}, false
	}
	return q14Row{b.Auction, b.Bidder, price, bidTimeType(b.DateTime), b.DateTime, b.Extra, countChar(b.Extra, "c")}, true
}

// hourUTC is HOUR(t) of the UTC time t (epoch ms), 0–23.
func hourUTC(ms int64) int64 {
	_, rest := floorDivMod(ms, msPerDay)
	return rest / msPerHour
}

// bidTimeType is q14's CASE on HOUR(dateTime).
func bidTimeType(ms int64) string {
	switch h := hourUTC(ms); {
	case h >= 8 && h <= 18:
		return "dayTime"
	case h <= 6 || h >= 20:
		return "nightTime"
	}
	return "otherTime"
}

// countChar is nexmark's count_char(s, chr) UDF: how many bytes of s's
// UTF-8 encoding equal the first byte of chr (which must not be empty, as
// the UDF fails on an empty chr).
func countChar(s, chr string) int64 {
	return int64(strings.Count(s, chr[:1])) // one byte: counts bytes
}
