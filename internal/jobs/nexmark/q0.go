package nexmark

import (
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q0 is the pass-through query: it measures the cost of reading and
// writing events.
//
//	SELECT auction, bidder, price, dateTime, extra FROM bid;
func init() {
	register(&Query{
		Name:    "q0",
		Columns: []string{"auction", "bidder", "price", "dateTime", "extra"},
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			Sink(weir.Map(Bids(events), func(b nexmark.Bid) q0Row {
				return q0Row{b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra}
			}).Name("q0").UID("q0"), p)
			return nil
		},
		Reference: q0Ref,
	})
}

type q0Row struct {
	Auction, Bidder, Price, DateTime int64
	Extra                            string
}

func (r q0Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Auction, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Bidder, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Price, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.DateTime, 10)
	dst = append(dst, ',')
	return nexmark.AppendField(dst, r.Extra)
}
