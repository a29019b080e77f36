package nexmark

import (
	"context"
	"strconv"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q5 finds the hot items: the auctions with the most bids in each 10 s
// window sliding every 2 s.
//
//	SELECT AuctionBids.auction, AuctionBids.num
//	 FROM (
//	   SELECT auction, count(*) AS num,
//	     window_start AS starttime, window_end AS endtime
//	   FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
//	   GROUP BY auction, window_start, window_end
//	 ) AS AuctionBids
//	 JOIN (
//	   SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
//	   FROM (
//	     SELECT count(*) AS num,
//	       window_start AS starttime, window_end AS endtime
//	     FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
//	     GROUP BY auction, window_start, window_end
//	   ) AS CountBids
//	   GROUP BY CountBids.starttime, CountBids.endtime
//	 ) AS MaxBids
//	 ON AuctionBids.starttime = MaxBids.starttime AND
//	    AuctionBids.endtime = MaxBids.endtime AND
//	    AuctionBids.num >= MaxBids.maxn;
//
// num >= maxn holds exactly for the auctions whose count is the
// window's maximum: every one of them is a row (ties are all kept), once
// per window. The plan: bids keyed by auction, counted incrementally per
// 2 s pane (a tumble window: one accumulator update per bid where a
// sliding window would update five, as Flink's SQL slices hop windows);
// per auction the five panes of each hop window summed at an event-time
// timer at the window's last millisecond; the counts keyed by window
// end, where a timer at the end's last millisecond (the timestamp the
// counts carry, so it fires once every subtask's counts of the window
// are in) emits the auctions at the maximum.
func init() {
	register(&Query{
		Name:     "q5",
		Columns:  []string{"auction", "num"},
		Stateful: true,
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			panes := weir.Window(weir.KeyBy(Bids(events), func(b nexmark.Bid) int64 { return b.Auction }),
				weir.TumblingEventTimeWindows(q5Slide))
			paneCounts := weir.AggregateProcessWindow(panes, weir.AggregateFunction[nexmark.Bid, int64, int64](bidCount{}),
				func() weir.ProcessWindowFunction[int64, int64, q5Count] { return q5Counted{} }).Name("q5-panes").UID("q5-panes")
			counts := weir.Process(weir.KeyBy(paneCounts, func(c q5Count) int64 { return c.Auction }),
				func() weir.KeyedProcessFunction[int64, q5Count, q5Count] { return &q5Hop{} }).Name("q5-counts").UID("q5-counts")
			hot := weir.Process(weir.KeyBy(counts, func(c q5Count) int64 { return c.End }),
				func() weir.KeyedProcessFunction[int64, q5Count, q5Row] { return &q5Max{} }).Name("q5-max").UID("q5-max")
			Sink(hot, p)
			return nil
		},
		Reference: q5Ref,
	})
}

const (
	q5Size  = 10 * time.Second
	q5Slide = 2 * time.Second
)

// q5Count is an auction's number of bids in the pane or window ending at
// End.
type q5Count struct {
	Auction, Num, End int64
}

// q5Counted adds the pane's end to an auction's count.
type q5Counted struct{}

func (q5Counted) Process(auction int64, wc *weir.WindowContext, counts []int64, out *weir.Collector[q5Count]) error {
	out.Collect(q5Count{auction, counts[0], wc.Window().End})
	return nil
}

// q5Hop sums an auction's pane counts into its hop windows: a pane
// ending at e is in the windows ending at e, e+2 s, …, e+8 s; each of
// them fires at a timer at its last millisecond, after which its oldest
// pane is in no later window and is dropped.
type q5Hop struct {
	panes weir.MapState[int64, int64] // pane end → count
}

func (f *q5Hop) Open(_ context.Context, kc *weir.KeyedContext[int64]) error {
	var err error
	f.panes, err = weir.GetMapState[int64, int64](kc, "panes")
	return err
}

func (f *q5Hop) ProcessElement(c q5Count, kc *weir.KeyedContext[int64], _ *weir.Collector[q5Count]) error {
	f.panes.Put(c.End, c.Num)
	size, slide := q5Size.Milliseconds(), q5Slide.Milliseconds()
	for w := c.End; w < c.End+size; w += slide {
		kc.RegisterEventTimeTimer(w - 1)
	}
	return nil
}

func (f *q5Hop) OnTimer(ts int64, kc *weir.KeyedContext[int64], out *weir.Collector[q5Count]) error {
	size, slide := q5Size.Milliseconds(), q5Slide.Milliseconds()
	end := ts + 1
	var num int64
	for e := end - size + slide; e <= end; e += slide {
		if n, ok := f.panes.Get(e); ok {
			num += n
		}
	}
	if num > 0 {
		out.Collect(q5Count{kc.CurrentKey(), num, end})
	}
	f.panes.Remove(end - size + slide)
	return nil
}

// q5Max keeps, per window end, the largest count so far and the
// auctions that have it, and emits them when the watermark passes the
// window's last millisecond.
type q5Max struct {
	max      weir.ValueState[int64]
	auctions weir.ListState[int64]
}

func (f *q5Max) Open(_ context.Context, kc *weir.KeyedContext[int64]) error {
	var err error
	if f.max, err = weir.GetValueState[int64](kc, "max"); err != nil {
		return err
	}
	f.auctions, err = weir.GetListState[int64](kc, "auctions")
	return err
}

func (f *q5Max) ProcessElement(c q5Count, kc *weir.KeyedContext[int64], _ *weir.Collector[q5Row]) error {
	m, ok := f.max.Value()
	switch {
	case !ok:
		kc.RegisterEventTimeTimer(c.End - 1)
		fallthrough
	case c.Num > m:
		f.max.Update(c.Num)
		f.auctions.Clear()
		f.auctions.Add(c.Auction)
	case c.Num == m:
		f.auctions.Add(c.Auction)
	}
	return nil
}

func (f *q5Max) OnTimer(_ int64, _ *weir.KeyedContext[int64], out *weir.Collector[q5Row]) error {
	m, _ := f.max.Value()
	for _, a := range f.auctions.Get() {
		out.Collect(q5Row{a, m})
	}
	f.max.Clear()
	f.auctions.Clear()
	return nil
}

// q5Row is a hot auction and its number of bids in the window.
type q5Row struct {
	Auction, Num int64
}

func (r q5Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Auction, 10)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, r.Num, 10)
}
