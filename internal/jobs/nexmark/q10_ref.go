package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q10Ref is q10 by hand.
func q10Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind == nexmark.KindBid {
			Emit(out, newQ10Row(&e.Bid))
		}
	}
	return nil
}
