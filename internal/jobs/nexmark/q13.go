package nexmark

import (
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q13 joins the bids with a bounded side input (stream enrichment).
//
//	CREATE TABLE side_input (key BIGINT, `value` VARCHAR)  -- a CSV file
//	SELECT B.auction, B.bidder, B.price, B.`dateTime`, S.`value`
//	FROM (SELECT *, PROCTIME() as p_time FROM bid) B
//	JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
//	ON mod(B.auction, 10000) = S.key;
//
// The side input is the table of q13_side.go: the default of nexmark's
// side_input_gen.sh (keys 0 … 9999, value = key), or Params.SideInput's
// file. It is an inner lookup join: a bid whose key has no row is
// dropped, and a bid whose key has several rows gives one row per match.
//
// The join is FOR SYSTEM_TIME AS OF the processing time, but the table is
// static (read once, when the job is built, by every process that runs
// it), so the version a bid sees is the same whenever it is processed:
// processing time plays no role in the result, which is a function of the
// events and the table, identical for every parallelism and after
// failures. The table is shared read-only by the subtasks; the lookup is
// an index into it (no hashing, no allocation).
func init() {
	register(&Query{
		Name:    "q13",
		Columns: []string{"auction", "bidder", "price", "dateTime", "value"},
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			side, err := loadSideInput(p.SideInput)
			if err != nil {
				return err
			}
			Sink(weir.FlatMap(Bids(events), func(b nexmark.Bid, out *weir.Collector[q13Row]) error {
				for _, v := range side.lookup(b.Auction) {
					out.Collect(q13Row{b.Auction, b.Bidder, b.Price, b.DateTime, v})
				}
				return nil
			}).Name("q13-join").UID("q13-join"), p)
			return nil
		},
		Reference: q13Ref,
	})
}

type q13Row struct {
	Auction, Bidder, Price, DateTime int64
	Value                            string
}

func (r q13Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Auction, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Bidder, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Price, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.DateTime, 10)
	dst = append(dst, ',')
	return nexmark.AppendField(dst, r.Value)
}
