package nexmark

import (
	"context"
	"strconv"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q7 finds the highest bids: the bids whose price is the maximum of a
// 10 s tumble window, joined back over the window's range.
//
//	SELECT B.auction, B.price, B.bidder, B.`dateTime`, B.extra
//	from bid B
//	JOIN (
//	  SELECT MAX(price) AS maxprice, window_end as `dateTime`
//	  FROM TABLE(
//	          TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
//	  GROUP BY window_start, window_end
//	) B1
//	ON B.price = B1.maxprice
//	WHERE B.`dateTime` BETWEEN B1.`dateTime`  - INTERVAL '10' SECOND AND B1.`dateTime`;
//
// The columns are the SELECT list's order (auction, price, bidder,
// dateTime, extra; Flink's sink table names them auction, bidder, price
// and fills them by position). BETWEEN is inclusive at both ends, so a
// window ending at E joins the bids of [E−10 s, E]: its own bids at the
// maximum and also the bids at exactly E (which belong to the next
// window) of that price; such a bid can be a row twice, once per window.
//
// The plan, bounded by the windows rather than by every bid as Flink's
// regular join keeps them: every bid goes to the window it belongs to
// and, when its dateTime is a window end, to that window as a boundary
// bid. Keyed by (window end, a hash bucket of the price), each bucket
// keeps its window's largest price so far, the bids at it and the
// boundary bids at or above it; an event-time timer at the window's end
// (the watermark then promises every bid up to and including E) sends on
// those at the bucket's maximum, keyed by window end, where the same
// reduction over all buckets leaves the window's maximum and at its
// timer the rows: the window's bids at the maximum and the boundary bids
// of that price.
func init() {
	register(&Query{
		Name:     "q7",
		Columns:  []string{"auction", "price", "bidder", "dateTime", "extra"},
		Stateful: true,
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			cands := weir.FlatMap(events, q7Candidates).Name("q7-bids").UID("q7-bids")
			local := weir.Process(weir.KeyBy(cands, q7Bucket),
				func() weir.KeyedProcessFunction[int64, q7Cand, q7Cand] { return &q7Max{} }).Name("q7-local-max").UID("q7-local-max")
			global := weir.Process(weir.KeyBy(local, func(c q7Cand) int64 { return c.End }),
				func() weir.KeyedProcessFunction[int64, q7Cand, q7Cand] { return &q7Max{} }).Name("q7-max").UID("q7-max")
			Sink(global, p)
			return nil
		},
		Reference: q7Ref,
	})
}

const (
	q7Size    = 10 * time.Second
	q7Buckets = 256 // per window in the first reduction
)

// q7Row is a row of q7.
type q7Row struct {
	Auction, Price, Bidder, DateTime int64
	Extra                            string
}

func (r q7Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Auction, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Price, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Bidder, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.DateTime, 10)
	dst = append(dst, ',')
	return nexmark.AppendField(dst, r.Extra)
}

// q7Cand is a bid that may join the window ending at End: one of the
// window's bids, or (Boundary) a bid at exactly End.
type q7Cand struct {
	Bid      q7Row
	End      int64
	Boundary bool
}

// AppendCSV writes the bid's row (the last q7Max emits candidates).
func (c q7Cand) AppendCSV(dst []byte) []byte { return c.Bid.AppendCSV(dst) }

// q7Candidates sends a bid to its window and, at a window end, to the
// window ending there.
func q7Candidates(e nexmark.Event, out *weir.Collector[q7Cand]) error {
	if e.Kind != nexmark.KindBid {
		return nil
	}
	b := &e.Bid
	size := q7Size.Milliseconds()
	row := q7Row{b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra}
	start := floorDiv(b.DateTime, size) * size
	out.Collect(q7Cand{row, start + size, false})
	if b.DateTime == start {
		out.Collect(q7Cand{row, start, true})
	}
	return nil
}

// q7Bucket keys a candidate by its window end and a hash of its price:
// the bids of one price meet in one bucket.
func q7Bucket(c q7Cand) int64 {
	h := uint64(c.Bid.Price) * 0x9e3779b97f4a7c15
	return c.End*q7Buckets + int64(h>>56)%q7Buckets
}

// q7Max reduces a window's candidates: the largest price of the window's
// own bids so far, the bids at it and the boundary bids at or above it
// (below it they cannot match the window's maximum). At the window's end
// it emits the candidates at the maximum: first per bucket, where a
// boundary bid of another price cannot be at the window's maximum either
// (the window's bids of that price would be in its bucket), then per
// window, where they are the rows.
type q7Max struct {
	max   weir.ValueState[int64] // -1: no own bid yet
	cands weir.ListState[q7Cand]
	keep  []q7Cand
}

func (f *q7Max) Open(_ context.Context, kc *weir.KeyedContext[int64]) error {
	var err error
	if f.max, err = weir.GetValueState[int64](kc, "max"); err != nil {
		return err
	}
	f.cands, err = weir.GetListState[q7Cand](kc, "candidates")
	return err
}

func (f *q7Max) ProcessElement(c q7Cand, kc *weir.KeyedContext[int64], _ *weir.Collector[q7Cand]) error {
	m, ok := f.max.Value()
	if !ok {
		m = -1
		f.max.Update(m)
		kc.RegisterEventTimeTimer(c.End)
	}
	switch {
	case c.Bid.Price < m:
	case c.Boundary || c.Bid.Price == m:
		f.cands.Add(c)
	default: // a new maximum: drop the candidates below it
		f.max.Update(c.Bid.Price)
		f.keep = f.keep[:0]
		for _, o := range f.cands.Get() {
			if o.Bid.Price >= c.Bid.Price {
				f.keep = append(f.keep, o)
			}
		}
		f.keep = append(f.keep, c)
		f.cands.Update(f.keep)
		clear(f.keep) // drop the strings
	}
	return nil
}

func (f *q7Max) OnTimer(_ int64, _ *weir.KeyedContext[int64], out *weir.Collector[q7Cand]) error {
	m, _ := f.max.Value()
	for _, c := range f.cands.Get() {
		if c.Bid.Price == m {
			out.Collect(c)
		}
	}
	f.max.Clear()
	f.cands.Clear()
	return nil
}
