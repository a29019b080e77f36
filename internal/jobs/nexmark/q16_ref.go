package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q16Ref is q16 by hand: a map of (channel, day) to the group's counts and
// distinct sets; the final table is emitted as +I rows at the end.
func q16Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	groups := map[q16Key]*distinctRef{}
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		b := &e.Bid
		k := q16Key{b.Channel, epochDay(b.DateTime)}
		s := groups[k]
		if s == nil {
			s = &distinctRef{}
			groups[k] = s
		}
		s.add(b.Bidder, b.Auction, b.Price)
		if m := minuteOfDay(b.DateTime); m > s.c.MaxMinute {
			s.c.MaxMinute = m
		}
	}
	for k, s := range groups {
		EmitChange(out, Insert, newQ16Row(k, &s.c))
	}
	return nil
}
