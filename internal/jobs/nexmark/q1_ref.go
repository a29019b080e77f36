package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q1Ref is q1 by hand.
func q1Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind == nexmark.KindBid {
			b := &e.Bid
			Emit(out, q1Row{b.Auction, b.Bidder, euros(b.Price), b.DateTime, b.Extra})
		}
	}
	return nil
}
