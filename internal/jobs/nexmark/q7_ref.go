package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q7Ref is q7 by hand. The generator's dateTimes do not decrease, so one
// window is open at a time: it keeps the window's largest price and the
// bids at it, emits them when the input passes the window's end, and
// then also emits the bids at exactly that end with the closed window's
// maximum price (BETWEEN is inclusive).
func q7Ref(p Params, n int64, out *RefOut) error {
	q7Loop(nexmark.NewGenerator(p.Gen), n, out)
	return nil
}

// q7Loop is q7Ref over events 0 … n-1 of any source of events (a test
// hands it events of its own).
func q7Loop[G interface{ At(int64, *nexmark.Event) }](g G, n int64, out *RefOut) {
	size := q7Size.Milliseconds()
	var (
		end     int64   = -1 // of the open window; -1: none yet
		best    int64        // its largest price
		atBest  []q7Row      // its bids at best
		prevEnd int64   = -1 // of the window closed last
		prevMax int64
	)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		b := &e.Bid
		if b.DateTime >= end {
			if end >= 0 {
				for _, r := range atBest {
					Emit(out, r)
				}
				prevEnd, prevMax = end, best
			}
			end = floorDiv(b.DateTime, size)*size + size
			best = -1
			clear(atBest)
			atBest = atBest[:0]
		}
		r := q7Row{b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra}
		if b.DateTime == prevEnd && b.Price == prevMax {
			Emit(out, r)
		}
		switch {
		case b.Price > best:
			best = b.Price
			clear(atBest)
			atBest = append(atBest[:0], r)
		case b.Price == best:
			atBest = append(atBest, r)
		}
	}
	for _, r := range atBest {
		Emit(out, r)
	}
}
