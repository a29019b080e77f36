package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q22Ref is q22 by hand: three splitIndex calls rather than the query's
// one-pass urlDirs, so the harness test checks one against the other.
func q22Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		b := &e.Bid
		r := q22Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel}
		for k := range r.Dir {
			r.Dir[k], _ = splitIndex(b.URL, "/", 3+k)
		}
		Emit(out, r)
	}
	return nil
}
