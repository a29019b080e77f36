package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q15Ref is q15 by hand: a map of days to their counts and distinct sets;
// the final table is emitted as +I rows at the end.
func q15Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	days := map[int64]*distinctRef{}
	var lastDay int64
	var last *distinctRef
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		b := &e.Bid
		d := epochDay(b.DateTime)
		if last == nil || d != lastDay {
			if last = days[d]; last == nil {
				last = &distinctRef{}
				days[d] = last
			}
			lastDay = d
		}
		last.add(b.Bidder, b.Auction, b.Price)
	}
	for d, s := range days {
		EmitChange(out, Insert, newQ15Row(d, &s.c))
	}
	return nil
}
