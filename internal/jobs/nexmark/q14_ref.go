package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q14Ref is q14 by hand.
func q14Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		if r, ok := q14Of(&e.Bid); ok {
			Emit(out, r)
		}
	}
	return nil
}
