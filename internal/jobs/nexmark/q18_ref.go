package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q18Ref is q18 by hand: a map of (bidder, auction) to its last bid; the
// final table is emitted as +I rows at the end.
func q18Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	last := map[q18Key]nexmark.Bid{}
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		b := &e.Bid
		k := q18Key{b.Bidder, b.Auction}
		if old, ok := last[k]; !ok || q18Later(b, &old) > 0 {
			last[k] = *b
		}
	}
	for _, b := range last {
		EmitChange(out, Insert, q18Row(b))
	}
	return nil
}
