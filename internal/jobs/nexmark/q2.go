package nexmark

import (
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q2 selects the bids of every 123rd auction.
//
//	SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
//
// MOD has the sign of the dividend (as Java's %, and Go's), which does not
// matter for "= 0".
func init() {
	register(&Query{
		Name:    "q2",
		Columns: []string{"auction", "price"},
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			Sink(weir.FlatMap(Bids(events), func(b nexmark.Bid, out *weir.Collector[q2Row]) error {
				if b.Auction%123 == 0 {
					out.Collect(q2Row{b.Auction, b.Price})
				}
				return nil
			}).Name("q2").UID("q2"), p)
			return nil
		},
		Reference: q2Ref,
	})
}

type q2Row struct {
	Auction, Price int64
}

func (r q2Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Auction, 10)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, r.Price, 10)
}
