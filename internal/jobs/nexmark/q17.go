package nexmark

import (
	"context"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q17 is the auction statistics report: per auction and day, the bids per
// price range and the min, max, average and sum of the prices.
// DATE_FORMAT is computed in UTC (agg_common.go).
//
//	SELECT
//	     auction,
//	     DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
//	     count(*) AS total_bids,
//	     count(*) filter (where price < 10000) AS rank1_bids,
//	     count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
//	     count(*) filter (where price >= 1000000) AS rank3_bids,
//	     min(price) AS min_price,
//	     max(price) AS max_price,
//	     avg(price) AS avg_price,
//	     sum(price) AS sum_price
//	FROM bid
//	GROUP BY auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
//
// A non-windowed GROUP BY: +I for a group's first bid, then -U old row /
// +U new row for each further bid. avg over BIGINT is a BIGINT: sum/count
// truncated, as Flink.
func init() {
	register(&Query{
		Name: "q17",
		Columns: []string{"auction", "day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
			"min_price", "max_price", "avg_price", "sum_price"},
		Changelog: true,
		Stateful:  true,
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			keyed := weir.KeyBy(Bids(events), func(b nexmark.Bid) q17Key { return q17Key{b.Auction, epochDay(b.DateTime)} })
			Sink(weir.Process(keyed, func() weir.KeyedProcessFunction[q17Key, nexmark.Bid, Change[q17Row]] {
				return &q17Agg{}
			}).Name("q17-agg").UID("q17-agg"), p)
			return nil
		},
		Reference: q17Ref,
	})
}

// q17Key is a group: an auction and an epoch day.
type q17Key struct{ Auction, Day int64 }

// StableHash mixes the auction and the day.
func (k q17Key) StableHash() uint32 { return mix64(mix64(0, k.Auction), k.Day) }

// q17Acc is a group's aggregate.
type q17Acc struct {
	Bids          [4]int64 // all, rank1, rank2, rank3
	Min, Max, Sum int64
}

// add folds a bid's price into a.
func (a *q17Acc) add(price int64) {
	if a.Bids[0] == 0 || price < a.Min {
		a.Min = price
	}
	if a.Bids[0] == 0 || price > a.Max {
		a.Max = price
	}
	a.Bids[0]++
	a.Bids[priceRank(price)]++
	a.Sum += price
}

// q17Row is one auction's and day's row.
type q17Row struct {
	Auction, Day int64
	A            q17Acc
}

func (r q17Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Auction, 10)
	dst = append(dst, ',')
	dst = appendDay(dst, r.Day)
	a := &r.A
	return appendInts(dst, a.Bids[0], a.Bids[1], a.Bids[2], a.Bids[3], a.Min, a.Max, a.Sum/a.Bids[0], a.Sum)
}

// q17Step is q17's per-bid logic as a pure function: the group's
// aggregate before the bid (existed false for a new group) gives the
// aggregate after it and the changes to emit (at most two, into out).
func q17Step(k q17Key, acc q17Acc, existed bool, price int64, out []Change[q17Row]) (q17Acc, []Change[q17Row]) {
	old := acc
	acc.add(price)
	switch {
	case !existed:
		out = append(out, Change[q17Row]{Insert, q17Row{k.Auction, k.Day, acc}})
	case old != acc:
		out = append(out, Change[q17Row]{UpdateBefore, q17Row{k.Auction, k.Day, old}},
			Change[q17Row]{UpdateAfter, q17Row{k.Auction, k.Day, acc}})
	}
	return acc, out
}

// q17Agg keeps each group's q17Acc in a ValueState.
type q17Agg struct {
	acc weir.ValueState[q17Acc]
	buf []Change[q17Row]
}

func (f *q17Agg) Open(_ context.Context, kc *weir.KeyedContext[q17Key]) (err error) {
	f.acc, err = weir.GetValueState[q17Acc](kc, "acc")
	return err
}

func (f *q17Agg) ProcessElement(b nexmark.Bid, kc *weir.KeyedContext[q17Key], out *weir.Collector[Change[q17Row]]) error {
	acc, existed := f.acc.Value()
	acc, f.buf = q17Step(kc.CurrentKey(), acc, existed, b.Price, f.buf[:0])
	f.acc.Update(acc)
	for _, c := range f.buf {
		out.Collect(c)
	}
	return nil
}
