package nexmark

import (
	"strconv"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q8 monitors new users: the people who created an auction in the 10 s
// tumble window in which they registered.
//
//	SELECT P.id, P.name, P.starttime
//	FROM (
//	  SELECT id, name,
//	        window_start AS starttime,
//	        window_end AS endtime
//	  FROM TABLE(
//	            TUMBLE(TABLE person, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
//	  GROUP BY id, name, window_start, window_end
//	) P
//	JOIN (
//	  SELECT seller,
//	        window_start AS starttime,
//	        window_end AS endtime
//	  FROM TABLE(
//	        TUMBLE(TABLE auction, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
//	  GROUP BY seller, window_start, window_end
//	) A
//	ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;
//
// Both sides are deduplicated per window as the GROUP BYs do: one P row
// per distinct (id, name) of a window, one A row per seller of a window,
// so a person with several auctions in its window is one row; starttime
// is the window's start, epoch ms. The plan follows the SQL: each side
// grouped in tumble windows (the results carry the window's last
// millisecond, so they fall in the same window again), then a window
// join on id = seller.
func init() {
	register(&Query{
		Name:     "q8",
		Columns:  []string{"id", "name", "starttime"},
		Stateful: true,
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			tumble := weir.TumblingEventTimeWindows(q8Size)
			people := weir.Map(People(events), func(p nexmark.Person) q8Row { return q8Row{ID: p.ID, Name: p.Name} }).Name("q8-people").UID("q8-people")
			newPeople := weir.ProcessWindow(weir.Window(weir.KeyBy(people, func(r q8Row) int64 { return r.ID }), tumble),
				func() weir.ProcessWindowFunction[int64, q8Row, q8Row] { return q8DistinctPeople{} }).Name("q8-p").UID("q8-p")
			sellers := weir.AggregateWindow(weir.Window(weir.KeyBy(Auctions(events), func(a nexmark.Auction) int64 { return a.Seller }), tumble),
				weir.AggregateFunction[nexmark.Auction, int64, int64](q8Seller{})).Name("q8-a").UID("q8-a")
			joined := weir.JoinWindow(weir.KeyBy(newPeople, func(r q8Row) int64 { return r.ID }),
				weir.KeyBy(sellers, func(s int64) int64 { return s }), tumble,
				func(p q8Row, _ int64) q8Row { return p }).Name("q8-join").UID("q8-join")
			Sink(joined, p)
			return nil
		},
		Reference: q8Ref,
	})
}

const q8Size = 10 * time.Second

// q8Row is a row of q8 (and, without Start, a person on its way to it).
type q8Row struct {
	ID    int64
	Name  string
	Start int64
}

func (r q8Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.ID, 10)
	dst = append(dst, ',')
	dst = nexmark.AppendField(dst, r.Name)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, r.Start, 10)
}

// q8DistinctPeople emits each distinct (id, name) of a window once, with
// the window's start.
type q8DistinctPeople struct{}

func (q8DistinctPeople) Process(id int64, wc *weir.WindowContext, people []q8Row, out *weir.Collector[q8Row]) error {
	start := wc.Window().Start
next:
	for i, p := range people {
		for _, q := range people[:i] {
			if q.Name == p.Name {
				continue next
			}
		}
		out.Collect(q8Row{id, p.Name, start})
	}
	return nil
}

// q8Seller reduces a seller's auctions of a window to the seller.
type q8Seller struct{}

func (q8Seller) CreateAccumulator() int64             { return 0 }
func (q8Seller) Add(a nexmark.Auction, _ int64) int64 { return a.Seller }
func (q8Seller) Result(s int64) int64                 { return s }
func (q8Seller) Merge(a, b int64) int64               { return max(a, b) }
