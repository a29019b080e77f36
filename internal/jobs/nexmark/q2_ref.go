package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q2Ref is q2 by hand.
func q2Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind == nexmark.KindBid && e.Bid.Auction%123 == 0 {
			Emit(out, q2Row{e.Bid.Auction, e.Bid.Price})
		}
	}
	return nil
}
