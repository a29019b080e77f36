package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q17Ref is q17 by hand: a map of (auction, day) to the group's
// aggregate; the final table is emitted as +I rows at the end.
func q17Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	groups := map[q17Key]q17Acc{}
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		b := &e.Bid
		k := q17Key{b.Auction, epochDay(b.DateTime)}
		a := groups[k]
		a.add(b.Price)
		groups[k] = a
	}
	for k, a := range groups {
		EmitChange(out, Insert, q17Row{k.Auction, k.Day, a})
	}
	return nil
}
