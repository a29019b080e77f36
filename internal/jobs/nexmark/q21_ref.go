package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q21Ref is q21 by hand.
func q21Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		if r, ok := q21Of(&e.Bid); ok {
			Emit(out, r)
		}
	}
	return nil
}
