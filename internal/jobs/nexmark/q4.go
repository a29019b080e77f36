package nexmark

import (
	"context"
	"slices"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q4 is the average closing price per category: per auction the highest
// bid made while it was open, then per category the average of those.
//
//	SELECT
//	    Q.category,
//	    AVG(Q.final)
//	FROM (
//	    SELECT MAX(B.price) AS final, A.category
//	    FROM auction A, bid B
//	    WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
//	    GROUP BY A.id, A.category
//	) Q
//	GROUP BY Q.category;
//
// An updating aggregate over an updating input, so its output is a
// changelog. Two keyed stages, as Flink's plan:
//
//   - q4-max, keyed by the auction id, joins bids with their auction and
//     keeps the auction's current maximum (only the maximum, never the
//     bids, once the auction is known). It emits a change only when the
//     maximum grows: the new maximum and the one it replaces, as one
//     record (Flink sends them as a -U and a +U row).
//   - q4-avg, keyed by the category, keeps the sum and count of the
//     maximums, applies each change (retract the old maximum, add the
//     new one) and emits +I for a category's first average, then -U of
//     the previous average and +U of the new one whenever the average
//     changes (an unchanged result emits nothing, as Flink's group
//     aggregate). AVG of a BIGINT is a BIGINT: the sum divided by the
//     count, truncated.
//
// A bid that comes before its auction (inputs from different subtasks
// arrive in any order) waits as (price, dateTime) until the auction does.
// A bid outside [dateTime, expires] of its auction is dropped.
//
// State cleanup by event time, which Flink's regular join does not do,
// and which does not change the result because no event is late (the
// generator's times grow with the event number and the watermark is
// dateTime − 4 s): once the watermark passes an auction's expires, no
// bid that could still come is within it, so the auction's state goes
// (its maximum stays in q4-avg's sum); once it passes a waiting bid's
// dateTime, every auction the bid could fall within has arrived, so the
// bid goes. A bid that comes for an auction already cleaned up waits and
// goes the same way.
func init() {
	register(&Query{
		Name:      "q4",
		Columns:   []string{"id", "final"},
		Changelog: true,
		Stateful:  true,
		Build:     buildQ4,
		Reference: q4Ref,
	})
}

type q4Row struct{ Category, Avg int64 }

func (r q4Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Category, 10)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, r.Avg, 10)
}

// q4Bid is what q4 needs of a bid.
type q4Bid struct{ Auction, Price, DateTime int64 }

// q4Auction is what q4 needs of an auction.
type q4Auction struct{ ID, DateTime, Expires, Category int64 }

// q4Open is the state of an auction id: once the auction has arrived
// (Known), its interval, its category and the highest price of a bid
// within the interval so far; before, the bids waiting for it.
type q4Open struct {
	Known                       bool
	DateTime, Expires, Category int64
	Max                         int64
	HasMax                      bool
	// Waiting holds, per dateTime, the highest price of the bids that
	// came before the auction: whether a bid falls within the auction
	// depends on its dateTime alone, so a lower bid of the same dateTime
	// can never be the maximum. At 10 M events/s thousands of bids share a
	// millisecond, so the list stays a few entries long.
	Waiting []q4Waiting
}

// q4Waiting is a bid waiting for its auction.
type q4Waiting struct{ Price, DateTime int64 }

// q4Change is q4-max's output: auction's maximum in Category went from
// Old (if HasOld) to New.
type q4Change struct {
	Category, Old, New int64
	HasOld             bool
}

func buildQ4(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
	bids := weir.FlatMap(events, func(e nexmark.Event, out *weir.Collector[q4Bid]) error {
		if e.Kind == nexmark.KindBid {
			out.Collect(q4Bid{e.Bid.Auction, e.Bid.Price, e.Bid.DateTime})
		}
		return nil
	}).Name("q4-bids").UID("q4-bids")
	auctions := weir.FlatMap(events, func(e nexmark.Event, out *weir.Collector[q4Auction]) error {
		if e.Kind == nexmark.KindAuction {
			a := &e.Auction
			out.Collect(q4Auction{a.ID, a.DateTime, a.Expires, a.Category})
		}
		return nil
	}).Name("q4-auctions").UID("q4-auctions")
	maxes := weir.CoProcess(weir.ConnectKeyed(
		weir.KeyBy(bids, func(b q4Bid) int64 { return b.Auction }),
		weir.KeyBy(auctions, func(a q4Auction) int64 { return a.ID }),
	), func() weir.KeyedCoProcessFunction[int64, q4Bid, q4Auction, q4Change] { return &q4Max{} }).Name("q4-max").UID("q4-max")
	avgs := weir.Process(weir.KeyBy(maxes, func(c q4Change) int64 { return c.Category }),
		func() weir.KeyedProcessFunction[int64, q4Change, Change[q4Row]] { return &q4Avg{} }).Name("q4-avg").UID("q4-avg")
	Sink(avgs, p)
	return nil
}

// q4Max is the first stage, keyed by the auction id. Its state is one
// value per auction id, so that a bid costs one read (of the lsm
// backend's write buffer, mostly) and a waiting bid one update.
type q4Max struct {
	state weir.ValueState[q4Open]
}

func (m *q4Max) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	m.state, err = weir.GetValueState[q4Open](kc, "auction")
	return err
}

// ProcessElement1 takes a bid: it raises its auction's maximum, or waits
// for the auction.
func (m *q4Max) ProcessElement1(b q4Bid, kc *weir.KeyedContext[int64], out *weir.Collector[q4Change]) error {
	a, _ := m.state.Value()
	if !a.Known {
		for i, w := range a.Waiting {
			if w.DateTime == b.DateTime {
				if b.Price > w.Price {
					// A copy: the heap backend's value (which a snapshot
					// may be reading) shares the slice.
					a.Waiting = slices.Clone(a.Waiting)
					a.Waiting[i].Price = b.Price
					m.state.Update(a)
				}
				return nil
			}
		}
		a.Waiting = append(a.Waiting[:len(a.Waiting):len(a.Waiting)], q4Waiting{b.Price, b.DateTime})
		m.state.Update(a)
		kc.RegisterEventTimeTimer(b.DateTime)
		return nil
	}
	if b.DateTime < a.DateTime || b.DateTime > a.Expires || a.HasMax && b.Price <= a.Max {
		return nil
	}
	out.Collect(q4Change{a.Category, a.Max, b.Price, a.HasMax})
	a.Max, a.HasMax = b.Price, true
	m.state.Update(a)
	return nil
}

// ProcessElement2 takes an auction (each arrives once): its maximum
// starts from the bids that came first.
func (m *q4Max) ProcessElement2(in q4Auction, kc *weir.KeyedContext[int64], out *weir.Collector[q4Change]) error {
	w, _ := m.state.Value()
	a := q4Open{Known: true, DateTime: in.DateTime, Expires: in.Expires, Category: in.Category}
	for _, b := range w.Waiting {
		if b.DateTime >= a.DateTime && b.DateTime <= a.Expires && (!a.HasMax || b.Price > a.Max) {
			a.Max, a.HasMax = b.Price, true
		}
	}
	if a.HasMax {
		out.Collect(q4Change{Category: a.Category, New: a.Max})
	}
	m.state.Update(a)
	kc.RegisterEventTimeTimer(a.Expires)
	return nil
}

// OnTimer cleans up what no bid still to come can change: the auction
// once the watermark passed its expires, and the waiting bids at or
// before the watermark.
func (m *q4Max) OnTimer(ts int64, _ *weir.KeyedContext[int64], _ *weir.Collector[q4Change]) error {
	a, ok := m.state.Value()
	switch {
	case !ok:
	case a.Known:
		if a.Expires <= ts {
			m.state.Clear()
		}
	default:
		keep := a.Waiting[:0:0]
		for _, b := range a.Waiting {
			if b.DateTime > ts {
				keep = append(keep, b)
			}
		}
		if len(keep) == 0 {
			m.state.Clear()
		} else if len(keep) < len(a.Waiting) {
			a.Waiting = keep
			m.state.Update(a)
		}
	}
	return nil
}

// q4Sum is a category's aggregate.
type q4Sum struct{ Sum, Count int64 }

// q4Avg is the second stage, keyed by the category.
type q4Avg struct {
	sum weir.ValueState[q4Sum]
}

func (g *q4Avg) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	g.sum, err = weir.GetValueState[q4Sum](kc, "sum")
	return err
}

func (g *q4Avg) ProcessElement(c q4Change, _ *weir.KeyedContext[int64], out *weir.Collector[Change[q4Row]]) error {
	s, had := g.sum.Value()
	var before int64
	if had {
		before = s.Sum / s.Count
	}
	if c.HasOld {
		s.Sum -= c.Old
		s.Count--
	}
	s.Sum += c.New
	s.Count++
	g.sum.Update(s)
	after := s.Sum / s.Count
	switch {
	case !had:
		out.Collect(Change[q4Row]{Insert, q4Row{c.Category, after}})
	case after != before:
		out.Collect(Change[q4Row]{UpdateBefore, q4Row{c.Category, before}})
		out.Collect(Change[q4Row]{UpdateAfter, q4Row{c.Category, after}})
	}
	return nil
}
