package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q22Ref is q22 by hand. It uses the query's one-pass urlDirs (the
// baseline should be as fast as the query's own function can be);
// q22_test.go checks urlDirs against three splitIndex calls and those
// against strings.Split.
func q22Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind == nexmark.KindBid {
			Emit(out, newQ22Row(&e.Bid))
		}
	}
	return nil
}
