package nexmark

import (
	"strconv"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q11 counts the bids of each bidder's sessions: a bidder's bids at most
// 10 s apart share a session.
//
//	SELECT
//	    B.bidder,
//	    count(*) as bid_count,
//	    SESSION_START(B.`dateTime`, INTERVAL '10' SECOND) as starttime,
//	    SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) as endtime
//	FROM bid B
//	GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND);
//
// As Flink's session windows, a bid opens [dateTime, dateTime + 10 s)
// and windows that overlap or touch merge: starttime is the session's
// first bid's dateTime, endtime its last bid's dateTime + 10 s (epoch
// ms). Sessions still open at the end of the input fire at the end.
func init() {
	register(&Query{
		Name:     "q11",
		Columns:  []string{"bidder", "bid_count", "starttime", "endtime"},
		Stateful: true,
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			sessions := weir.Window(weir.KeyBy(Bids(events), func(b nexmark.Bid) int64 { return b.Bidder }),
				weir.EventTimeSessionWindows(q11Gap))
			Sink(weir.AggregateProcessWindow(sessions, weir.AggregateFunction[nexmark.Bid, int64, int64](bidCount{}),
				func() weir.ProcessWindowFunction[int64, int64, bidderWindowRow] { return bidderWindow{} }).Name("q11").UID("q11"), p)
			return nil
		},
		Reference: q11Ref,
	})
}

const q11Gap = 10 * time.Second

// bidCount counts a window's bids (q5, q11, q12).
type bidCount struct{}

func (bidCount) CreateAccumulator() int64         { return 0 }
func (bidCount) Add(_ nexmark.Bid, n int64) int64 { return n + 1 }
func (bidCount) Result(n int64) int64             { return n }
func (bidCount) Merge(a, b int64) int64           { return a + b }

// bidderWindowRow is a row of q11 and q12: a bidder's count of bids in
// a window and the window's bounds, epoch ms.
type bidderWindowRow struct {
	Bidder, Count, Start, End int64
}

func (r bidderWindowRow) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Bidder, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Count, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Start, 10)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, r.End, 10)
}

// bidderWindow turns a bidder's window count into its row.
type bidderWindow struct{}

func (bidderWindow) Process(bidder int64, wc *weir.WindowContext, counts []int64, out *weir.Collector[bidderWindowRow]) error {
	w := wc.Window()
	out.Collect(bidderWindowRow{bidder, counts[0], w.Start, w.End})
	return nil
}
