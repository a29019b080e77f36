package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q0Ref is q0 by hand.
func q0Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind == nexmark.KindBid {
			b := &e.Bid
			Emit(out, q0Row{b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra})
		}
	}
	return nil
}
