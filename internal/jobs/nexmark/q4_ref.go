package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q4Ref is q4 by hand, in event order: the open auctions with their
// maximum so far, the bids whose auction has not been seen yet (a bid can
// name an auction the generator has not reached), and per category the
// sum and count of the final maximums. Events come in dateTime order, so
// an auction whose expires is before the current event's dateTime is
// final (its maximum goes into its category's sum), and a waiting bid
// from before it can fall within no auction still to come; a sweep, as
// often as the maps are large, drops both. At the end the open auctions
// are final too, and the table is one +I row per category.
func q4Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	open := map[int64]q4Open{}
	waiting := map[int64][]q4Waiting{}
	sums := map[int64]q4Sum{}
	final := func(a q4Open) {
		if a.HasMax {
			s := sums[a.Category]
			s.Sum += a.Max
			s.Count++
			sums[a.Category] = s
		}
	}
	var sweep int64
	for i := range n {
		g.At(i, &e)
		if i >= sweep {
			now := e.DateTime()
			for id, a := range open {
				if a.Expires < now {
					final(a)
					delete(open, id)
				}
			}
			for id, w := range waiting {
				keep := w[:0]
				for _, b := range w {
					if b.DateTime >= now {
						keep = append(keep, b)
					}
				}
				if len(keep) == 0 {
					delete(waiting, id)
				} else {
					waiting[id] = keep
				}
			}
			sweep = i + max(1<<12, 2*int64(len(open)+len(waiting)))
		}
		switch e.Kind {
		case nexmark.KindAuction:
			in := &e.Auction
			a := q4Open{DateTime: in.DateTime, Expires: in.Expires, Category: in.Category}
			for _, b := range waiting[in.ID] {
				if b.DateTime >= a.DateTime && b.DateTime <= a.Expires && (!a.HasMax || b.Price > a.Max) {
					a.Max, a.HasMax = b.Price, true
				}
			}
			delete(waiting, in.ID)
			open[in.ID] = a
		case nexmark.KindBid:
			b := &e.Bid
			a, ok := open[b.Auction]
			switch {
			case !ok:
				waiting[b.Auction] = append(waiting[b.Auction], q4Waiting{b.Price, b.DateTime})
			case b.DateTime >= a.DateTime && b.DateTime <= a.Expires && (!a.HasMax || b.Price > a.Max):
				a.Max, a.HasMax = b.Price, true
				open[b.Auction] = a
			}
		}
	}
	for _, a := range open {
		final(a)
	}
	for c, s := range sums {
		EmitChange(out, Insert, q4Row{c, s.Sum / s.Count})
	}
	return nil
}
