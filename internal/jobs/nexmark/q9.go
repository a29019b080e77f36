package nexmark

import (
	"context"
	"slices"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q9 is the winning bid of each auction: the highest bid made while it
// was open, the earliest of equal ones.
//
//	SELECT
//	    id, itemName, description, initialBid, reserve, `dateTime`, expires, seller, category, extra,
//	    auction, bidder, price, bid_dateTime, bid_extra
//	FROM (
//	   SELECT A.*, B.auction, B.bidder, B.price, B.`dateTime` AS bid_dateTime, B.extra AS bid_extra,
//	     ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.`dateTime` ASC) AS rownum
//	   FROM auction A, bid B
//	   WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
//	)
//	WHERE rownum <= 1;
//
// A top-1 over a join, so its output is a changelog, as Flink's Rank of
// the top row (no row number in the output) writes it: +I for an
// auction's first winner, then -U of the previous winner's row and +U of
// the new one whenever the winner changes. One keyed stage, keyed by the
// auction id, joins bids with their auction and keeps the current winner
// (only the winner, never the other bids, once the auction is known).
//
// Ties: Flink keeps the first of bids equal in price and dateTime, which
// depends on arrival order. Here the order goes on to bidder ascending,
// then the bid's extra ascending (byte order); bids equal in all of these
// give equal rows (the bid's channel and url are not in the output), so
// the winner's row is a function of the input alone. A new bid replaces
// the winner only if it comes strictly first in that order.
//
// A bid that comes before its auction (inputs from different subtasks
// arrive in any order) waits until the auction does. A bid outside
// [dateTime, expires] of its auction is dropped.
//
// State cleanup by event time, which Flink's regular join does not do,
// and which does not change the result because no event is late (the
// generator's times grow with the event number and the watermark is
// dateTime − 4 s): once the watermark passes an auction's expires, no
// bid that could still come is within it, so the auction's state goes
// (its winner's row stays in the output); once it passes a waiting bid's
// dateTime, every auction the bid could fall within has arrived, so the
// bid goes. A bid that comes for an auction already cleaned up waits and
// goes the same way.
func init() {
	register(&Query{
		Name: "q9",
		Columns: []string{"id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires", "seller", "category", "extra",
			"auction", "bidder", "price", "bid_dateTime", "bid_extra"},
		Changelog: true,
		Stateful:  true,
		Build:     buildQ9,
		Reference: q9Ref,
	})
}

// q9Bid is what q9 outputs of a bid but its auction (the key).
type q9Bid struct {
	Bidder, Price, DateTime int64
	Extra                   string
}

// q9BidIn is a bid on its way to the join.
type q9BidIn struct {
	Auction int64
	q9Bid
}

type q9Row struct {
	A nexmark.Auction
	B q9Bid
}

func (r q9Row) AppendCSV(dst []byte) []byte {
	a, b := &r.A, &r.B
	dst = append(nexmark.AppendAuction(dst, a), ',') // A.*
	dst = strconv.AppendInt(dst, a.ID, 10)           // B.auction = A.id
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, b.Bidder, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, b.Price, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, b.DateTime, 10)
	dst = append(dst, ',')
	return nexmark.AppendField(dst, b.Extra)
}

// q9Cmp3 orders bids by the first three keys of the winner's order
// (price descending, dateTime ascending, bidder ascending): negative if
// x comes first, 0 if they tie on all three.
func q9Cmp3(xPrice, xTime, xBidder, yPrice, yTime, yBidder int64) int {
	switch {
	case xPrice != yPrice:
		if xPrice > yPrice {
			return -1
		}
		return 1
	case xTime != yTime:
		if xTime < yTime {
			return -1
		}
		return 1
	case xBidder != yBidder:
		if xBidder < yBidder {
			return -1
		}
		return 1
	}
	return 0
}

// q9First reports whether bid x comes strictly before bid y in the
// winner's order.
func q9First(x, y *q9Bid) bool {
	c := q9Cmp3(x.Price, x.DateTime, x.Bidder, y.Price, y.DateTime, y.Bidder)
	return c < 0 || c == 0 && x.Extra < y.Extra
}

// q9Hot is the state every bid reads, one value per auction id: once the
// auction has arrived (Known), its interval and the current winner's
// order keys (the strings, needed only when the winner changes, are in
// q9Cold); before, the bids waiting for it.
type q9Hot struct {
	Known                      bool
	DateTime, Expires          int64
	HasWinner                  bool
	Price, BidDateTime, Bidder int64
	// Waiting holds, per dateTime, the first in the winner's order of the
	// bids that came before the auction: whether a bid falls within the
	// auction depends on its dateTime alone, so a bid behind another of
	// the same dateTime can never win. At 10 M events/s thousands of bids
	// share a millisecond, so the list stays a few entries long.
	Waiting []q9Bid
}

// q9Cold is the rest of the auction's columns and the winner's extra.
type q9Cold struct {
	ItemName, Description string
	InitialBid, Reserve   int64
	Seller, Category      int64
	Extra                 string
	BidExtra              string
}

func buildQ9(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
	bids := weir.FlatMap(events, func(e nexmark.Event, out *weir.Collector[q9BidIn]) error {
		if e.Kind == nexmark.KindBid {
			b := &e.Bid
			out.Collect(q9BidIn{b.Auction, q9Bid{b.Bidder, b.Price, b.DateTime, b.Extra}})
		}
		return nil
	}).Name("q9-bids").UID("q9-bids")
	auctions := weir.FlatMap(events, func(e nexmark.Event, out *weir.Collector[nexmark.Auction]) error {
		if e.Kind == nexmark.KindAuction {
			out.Collect(e.Auction)
		}
		return nil
	}).Name("q9-auctions").UID("q9-auctions")
	winners := weir.CoProcess(weir.ConnectKeyed(
		weir.KeyBy(bids, func(b q9BidIn) int64 { return b.Auction }),
		weir.KeyBy(auctions, func(a nexmark.Auction) int64 { return a.ID }),
	), func() weir.KeyedCoProcessFunction[int64, q9BidIn, nexmark.Auction, Change[q9Row]] { return &q9Winner{} }).Name("q9-winner").UID("q9-winner")
	Sink(winners, p)
	return nil
}

// q9Winner is the join and top-1, keyed by the auction id.
type q9Winner struct {
	hot  weir.ValueState[q9Hot]
	cold weir.ValueState[q9Cold]
}

func (w *q9Winner) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	if w.hot, err = weir.GetValueState[q9Hot](kc, "auction"); err != nil {
		return err
	}
	w.cold, err = weir.GetValueState[q9Cold](kc, "auction-columns")
	return err
}

// row is the output row of the auction with key id and winner b.
func (w *q9Winner) row(id int64, h *q9Hot, c *q9Cold, b q9Bid) q9Row {
	return q9Row{nexmark.Auction{ID: id, ItemName: c.ItemName, Description: c.Description, InitialBid: c.InitialBid, Reserve: c.Reserve,
		DateTime: h.DateTime, Expires: h.Expires, Seller: c.Seller, Category: c.Category, Extra: c.Extra}, b}
}

// ProcessElement1 takes a bid: it may become its auction's winner, or it
// waits for the auction.
func (w *q9Winner) ProcessElement1(in q9BidIn, kc *weir.KeyedContext[int64], out *weir.Collector[Change[q9Row]]) error {
	b := in.q9Bid
	h, _ := w.hot.Value()
	if !h.Known {
		for i, x := range h.Waiting {
			if x.DateTime == b.DateTime {
				if q9First(&b, &x) {
					// A copy: the heap backend's value (which a snapshot
					// may be reading) shares the slice.
					h.Waiting = slices.Clone(h.Waiting)
					h.Waiting[i] = b
					w.hot.Update(h)
				}
				return nil
			}
		}
		h.Waiting = append(h.Waiting[:len(h.Waiting):len(h.Waiting)], b)
		w.hot.Update(h)
		kc.RegisterEventTimeTimer(b.DateTime)
		return nil
	}
	if b.DateTime < h.DateTime || b.DateTime > h.Expires {
		return nil
	}
	var cmp int
	if h.HasWinner {
		if cmp = q9Cmp3(b.Price, b.DateTime, b.Bidder, h.Price, h.BidDateTime, h.Bidder); cmp > 0 {
			return nil
		}
	}
	c, _ := w.cold.Value()
	if h.HasWinner {
		if cmp == 0 && b.Extra >= c.BidExtra {
			return nil
		}
		out.Collect(Change[q9Row]{UpdateBefore, w.row(in.Auction, &h, &c, q9Bid{h.Bidder, h.Price, h.BidDateTime, c.BidExtra})})
		out.Collect(Change[q9Row]{UpdateAfter, w.row(in.Auction, &h, &c, b)})
	} else {
		out.Collect(Change[q9Row]{Insert, w.row(in.Auction, &h, &c, b)})
	}
	h.HasWinner, h.Price, h.BidDateTime, h.Bidder = true, b.Price, b.DateTime, b.Bidder
	c.BidExtra = b.Extra
	w.hot.Update(h)
	w.cold.Update(c)
	return nil
}

// ProcessElement2 takes an auction (each arrives once): its winner starts
// as the best of the bids that came first.
func (w *q9Winner) ProcessElement2(a nexmark.Auction, kc *weir.KeyedContext[int64], out *weir.Collector[Change[q9Row]]) error {
	waiting, _ := w.hot.Value()
	h := q9Hot{Known: true, DateTime: a.DateTime, Expires: a.Expires}
	c := q9Cold{ItemName: a.ItemName, Description: a.Description, InitialBid: a.InitialBid, Reserve: a.Reserve,
		Seller: a.Seller, Category: a.Category, Extra: a.Extra}
	var best q9Bid
	for _, b := range waiting.Waiting {
		if b.DateTime >= a.DateTime && b.DateTime <= a.Expires && (!h.HasWinner || q9First(&b, &best)) {
			best, h.HasWinner = b, true
		}
	}
	if h.HasWinner {
		h.Price, h.BidDateTime, h.Bidder, c.BidExtra = best.Price, best.DateTime, best.Bidder, best.Extra
		out.Collect(Change[q9Row]{Insert, q9Row{a, best}})
	}
	w.hot.Update(h)
	w.cold.Update(c)
	kc.RegisterEventTimeTimer(a.Expires)
	return nil
}

// OnTimer cleans up what no bid still to come can change: the auction
// once the watermark passed its expires, and the waiting bids at or
// before the watermark.
func (w *q9Winner) OnTimer(ts int64, _ *weir.KeyedContext[int64], _ *weir.Collector[Change[q9Row]]) error {
	h, ok := w.hot.Value()
	switch {
	case !ok:
	case h.Known:
		if h.Expires <= ts {
			w.hot.Clear()
			w.cold.Clear()
		}
	default:
		keep := h.Waiting[:0:0]
		for _, b := range h.Waiting {
			if b.DateTime > ts {
				keep = append(keep, b)
			}
		}
		if len(keep) == 0 {
			w.hot.Clear()
		} else if len(keep) < len(h.Waiting) {
			h.Waiting = keep
			w.hot.Update(h)
		}
	}
	return nil
}
