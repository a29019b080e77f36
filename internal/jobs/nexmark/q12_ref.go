package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q12Ref is q12's benchmark baseline: a count per bidder per 10 s
// window, with the window taken from the bid's dateTime (a loop has no
// meaningful processing time). The generator's dateTimes do not
// decrease, so one window is open at a time.
func q12Ref(p Params, n int64, out *RefOut) error {
	size := q12Size.Milliseconds()
	counts := map[int64]int64{}
	start := int64(-1)
	flush := func() {
		for bidder, c := range counts {
			Emit(out, bidderWindowRow{bidder, c, start, start + size})
		}
		clear(counts)
	}
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		if s := e.Bid.DateTime - e.Bid.DateTime%size; s != start {
			flush()
			start = s
		}
		counts[e.Bid.Bidder]++
	}
	flush()
	return nil
}
