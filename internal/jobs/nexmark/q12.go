package nexmark

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q12 counts each bidder's bids per 10 s window of processing time.
//
//	CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;
//
//	SELECT
//	    bidder,
//	    count(*) as bid_count,
//	    window_start AS starttime,
//	    window_end AS endtime
//	FROM TABLE(
//	        TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
//	GROUP BY bidder, window_start, window_end;
//
// The windows are the wall clock's (epoch ms, UTC), so the rows are not
// a function of the events: Verify checks what is (every bidder's counts
// add up to its bids, every window is a 10 s tumble window, no bidder's
// window twice). The windows still open at the end of the bounded input
// fire then. The reference (the benchmark's baseline) counts by the
// bid's dateTime instead of the wall clock.
func init() {
	register(&Query{
		Name:           "q12",
		Columns:        []string{"bidder", "bid_count", "starttime", "endtime"},
		ProcessingTime: true,
		Stateful:       true,
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			windows := weir.Window(weir.KeyBy(Bids(events), func(b nexmark.Bid) int64 { return b.Bidder }),
				weir.TumblingProcessingTimeWindows(q12Size))
			Sink(weir.AggregateProcessWindow(windows, weir.AggregateFunction[nexmark.Bid, int64, int64](bidCount{}),
				func() weir.ProcessWindowFunction[int64, int64, bidderWindowRow] { return bidderWindow{} }).Name("q12").UID("q12"), p)
			return nil
		},
		Reference: q12Ref,
		Verify:    q12Verify,
	})
}

const q12Size = 10 * time.Second

// q12Verify checks committed rows of q12 over events 0 … n-1.
func q12Verify(p Params, n int64, committed []string) error {
	size := q12Size.Milliseconds()
	want := map[int64]int64{}
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind == nexmark.KindBid {
			want[e.Bid.Bidder]++
		}
	}
	got := map[int64]int64{}
	seen := map[[2]int64]bool{}
	for _, l := range committed {
		f := strings.Split(l, ",")
		if len(f) != 4 {
			return fmt.Errorf("q12: line %q: want 4 columns", l)
		}
		var v [4]int64
		for i, s := range f {
			x, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("q12: line %q: %v", l, err)
			}
			v[i] = x
		}
		bidder, count, start, end := v[0], v[1], v[2], v[3]
		if count <= 0 || end-start != size || start%size != 0 {
			return fmt.Errorf("q12: line %q: want a positive count in a %d ms window aligned to %d ms", l, size, size)
		}
		if seen[[2]int64{bidder, start}] {
			return fmt.Errorf("q12: line %q: bidder %d's window [%d, %d) committed twice", l, bidder, start, end)
		}
		seen[[2]int64{bidder, start}] = true
		got[bidder] += count
	}
	for b, c := range want {
		if got[b] != c {
			return fmt.Errorf("q12: bidder %d: %d bids counted in its windows, %d in the input", b, got[b], c)
		}
	}
	for b, c := range got {
		if _, ok := want[b]; !ok {
			return fmt.Errorf("q12: bidder %d: %d bids counted, none in the input", b, c)
		}
	}
	return nil
}
