package nexmark

import (
	"cmp"

	"github.com/weirstream/weir/connectors/nexmark"
)

// q9Open is an auction the reference has seen and not finished.
type q9Open struct {
	A         nexmark.Auction
	HasWinner bool
	Winner    q9Bid
}

// q9Before is the winner's order written out as the SQL says, then q9's
// tie-break: price descending, dateTime ascending, bidder ascending,
// extra ascending.
func q9Before(x, y *q9Bid) bool {
	return cmp.Or(cmp.Compare(y.Price, x.Price), cmp.Compare(x.DateTime, y.DateTime),
		cmp.Compare(x.Bidder, y.Bidder), cmp.Compare(x.Extra, y.Extra)) < 0
}

// q9Ref is q9 by hand, in event order: the open auctions with their
// winner so far and the bids whose auction has not been seen yet (a bid
// can name an auction the generator has not reached). Events come in
// dateTime order, so an auction whose expires is before the current
// event's dateTime is final (its winner is emitted), and a waiting bid
// from before it can fall within no auction still to come; a sweep, as
// often as the maps are large, drops both. At the end the open auctions
// are final too. The table is one +I row per auction with a winner.
func q9Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	open := map[int64]q9Open{}
	waiting := map[int64][]q9Bid{}
	final := func(o q9Open) {
		if o.HasWinner {
			EmitChange(out, Insert, q9Row{o.A, o.Winner})
		}
	}
	offer := func(o *q9Open, b *q9Bid) {
		if b.DateTime >= o.A.DateTime && b.DateTime <= o.A.Expires && (!o.HasWinner || q9Before(b, &o.Winner)) {
			o.Winner, o.HasWinner = *b, true
		}
	}
	var sweep int64
	for i := range n {
		g.At(i, &e)
		if i >= sweep {
			now := e.DateTime()
			for id, o := range open {
				if o.A.Expires < now {
					final(o)
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
			o := q9Open{A: e.Auction}
			for _, b := range waiting[o.A.ID] {
				offer(&o, &b)
			}
			delete(waiting, o.A.ID)
			open[o.A.ID] = o
		case nexmark.KindBid:
			b := q9Bid{e.Bid.Bidder, e.Bid.Price, e.Bid.DateTime, e.Bid.Extra}
			if o, ok := open[e.Bid.Auction]; ok {
				offer(&o, &b)
				open[e.Bid.Auction] = o
			} else {
				waiting[e.Bid.Auction] = append(waiting[e.Bid.Auction], b)
			}
		}
	}
	for _, o := range open {
		final(o)
	}
	return nil
}
