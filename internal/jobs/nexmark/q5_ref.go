package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q5Ref is q5 by hand. It counts bids per auction per 2 s pane (a ring
// of the last five panes, the panes of one 10 s window) and, when the
// input passes a window's end, sums the window's five panes and emits the
// auctions at the maximum. The generator's dateTimes do not decrease, so
// a window is complete once a later pane starts; the last windows fire
// at the end of the input.
func q5Ref(p Params, n int64, out *RefOut) error {
	slide := q5Slide.Milliseconds()
	const panes = int64(q5Size / q5Slide)
	var ring [panes]map[int64]int64
	for i := range ring {
		ring[i] = map[int64]int64{}
	}
	sum := map[int64]int64{}
	// fire emits the window ending at pane index end (it covers panes
	// end-panes … end-1, all of them complete).
	fire := func(end int64) {
		clear(sum)
		for k := end - panes; k < end; k++ {
			for a, c := range ring[mod(k, panes)] {
				sum[a] += c
			}
		}
		var m int64
		for _, c := range sum {
			m = max(m, c)
		}
		for a, c := range sum {
			if c == m {
				Emit(out, q5Row{a, c})
			}
		}
		// The oldest pane belongs to no later window.
		clear(ring[mod(end-panes, panes)])
	}
	cur := int64(0) // pane index of the last bid
	seen := false
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		k := floorDiv(e.Bid.DateTime, slide)
		if !seen {
			cur, seen = k, true
		}
		// Windows ending at panes cur+1 … k are complete (stop once they
		// hold no pane that has bids).
		for end := cur + 1; end <= k && end-panes <= cur; end++ {
			fire(end)
		}
		cur = k
		ring[mod(k, panes)][e.Bid.Auction]++
	}
	if seen {
		for end := cur + 1; end <= cur+panes; end++ {
			fire(end)
		}
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
