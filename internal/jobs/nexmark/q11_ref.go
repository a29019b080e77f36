package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q11Ref is q11 by hand. The generator's dateTimes do not decrease with
// the event number, so a bidder's session ends at the first of its bids
// more than the gap after the session's last one; the sessions still
// open at the end fire then.
func q11Ref(p Params, n int64, out *RefOut) error {
	type session struct{ start, last, count int64 }
	gap := q11Gap.Milliseconds()
	open := map[int64]session{}
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		b := &e.Bid
		s, ok := open[b.Bidder]
		switch {
		case !ok:
			s = session{b.DateTime, b.DateTime, 1}
		case b.DateTime-s.last <= gap: // [last, last+gap) and [t, t+gap) overlap or touch
			s.last = max(s.last, b.DateTime)
			s.count++
		default:
			Emit(out, bidderWindowRow{b.Bidder, s.count, s.start, s.last + gap})
			s = session{b.DateTime, b.DateTime, 1}
		}
		open[b.Bidder] = s
	}
	for bidder, s := range open {
		Emit(out, bidderWindowRow{bidder, s.count, s.start, s.last + gap})
	}
	return nil
}
