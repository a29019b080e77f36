package nexmark

import (
	"cmp"
	"context"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q19 is the top 10 bids by price of each auction (a TopN with the rank
// in the output).
//
//	SELECT * FROM
//	(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
//	WHERE rank_number <= 10;
//
// The columns are the bid's (auction, bidder, price, channel, url,
// dateTime, extra) and rank_number. The output is a changelog per rank
// position, as Flink's TopN with the row number in its output: a bid that
// enters at rank r shifts the rows at ranks r … 10 down one, so for each
// of those positions whose row changed it emits -U old row (with its rank)
// / +U new row (with the same rank), and +I for a position that was empty
// (the auction had fewer than 10 bids). The row that falls off rank 10 is
// retracted by its position's -U; the input only grows, so there is never
// a -D.
//
// Flink orders bids of equal price by arrival (an earlier one keeps the
// better rank), which depends on the arrival order; here the order is
// total, so the result is the same for every parallelism: price
// descending, then dateTime ascending (the earlier bid first, as Flink
// would rank in-order arrivals), then bidder, channel, url and extra
// ascending (bytes). Two bids equal in every column are interchangeable.
func init() {
	register(&Query{
		Name:      "q19",
		Columns:   []string{"auction", "bidder", "price", "channel", "url", "dateTime", "extra", "rank_number"},
		Changelog: true,
		Stateful:  true,
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			keyed := weir.KeyBy(Bids(events), func(b nexmark.Bid) int64 { return b.Auction })
			Sink(weir.Process(keyed, func() weir.KeyedProcessFunction[int64, nexmark.Bid, Change[q19Row]] {
				return &q19TopN{}
			}).Name("q19-topn").UID("q19-topn"), p)
			return nil
		},
		Reference: q19Ref,
	})
}

// q19N is the N of the TopN.
const q19N = 10

// q19Before orders two bids of one auction: -1 if a ranks before b, +1
// if after, 0 if they are equal.
func q19Before(a, b *nexmark.Bid) int {
	if c := cmp.Compare(b.Price, a.Price); c != 0 {
		return c
	}
	if c := q19Head(a, b); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Channel, b.Channel); c != 0 {
		return c
	}
	if c := cmp.Compare(a.URL, b.URL); c != 0 {
		return c
	}
	return cmp.Compare(a.Extra, b.Extra)
}

// q19Head compares the integer columns after the price: dateTime, then
// bidder, ascending.
func q19Head(a, b *nexmark.Bid) int {
	if c := cmp.Compare(a.DateTime, b.DateTime); c != 0 {
		return c
	}
	return cmp.Compare(a.Bidder, b.Bidder)
}

// q19Top is an auction's top bids, best first: B[:N].
type q19Top struct {
	N int64
	B [q19N]nexmark.Bid
}

// q19Floor is the integer sort columns of the last of a full top list:
// a bid ranking after them cannot enter, which q19TopN tells without
// reading (on lsm: decoding) the whole list.
type q19Floor struct{ Price, DateTime, Bidder int64 }

// after reports whether b ranks strictly after every bid with f's columns.
func (f *q19Floor) after(b *nexmark.Bid) bool {
	fb := nexmark.Bid{Price: f.Price, DateTime: f.DateTime, Bidder: f.Bidder}
	if c := cmp.Compare(fb.Price, b.Price); c != 0 {
		return c > 0
	}
	return q19Head(b, &fb) > 0
}

// q19Row is a bid with its rank.
type q19Row struct {
	B    nexmark.Bid
	Rank int64
}

func (r q19Row) AppendCSV(dst []byte) []byte {
	dst = appendBid(dst, &r.B)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, r.Rank, 10)
}

// q19Insert is q19's per-bid logic as a pure function: it inserts b into
// top, appends the changes to out and reports whether top changed.
func q19Insert(top *q19Top, b *nexmark.Bid, out []Change[q19Row]) (bool, []Change[q19Row]) {
	pos := top.N
	for i := range top.N {
		if q19Before(b, &top.B[i]) < 0 {
			pos = i
			break
		}
	}
	if pos >= q19N {
		return false, out
	}
	oldN := top.N
	newN := min(oldN+1, q19N)
	// The rows that move: old[pos:newN] become new[pos+1:newN].
	var old [q19N]nexmark.Bid
	copy(old[pos:newN], top.B[pos:newN])
	copy(top.B[pos+1:newN], old[pos:newN-1])
	top.B[pos] = *b
	top.N = newN
	for i := pos; i < newN; i++ {
		switch {
		case i >= oldN:
			out = append(out, Change[q19Row]{Insert, q19Row{top.B[i], i + 1}})
		case old[i] != top.B[i]:
			out = append(out, Change[q19Row]{UpdateBefore, q19Row{old[i], i + 1}},
				Change[q19Row]{UpdateAfter, q19Row{top.B[i], i + 1}})
		}
	}
	return true, out
}

// q19TopN keeps each auction's top list, and its floor once it is full.
type q19TopN struct {
	top   weir.ValueState[q19Top]
	floor weir.ValueState[q19Floor]
	buf   []Change[q19Row]
}

func (f *q19TopN) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	if f.top, err = weir.GetValueState[q19Top](kc, "top"); err != nil {
		return err
	}
	f.floor, err = weir.GetValueState[q19Floor](kc, "floor")
	return err
}

func (f *q19TopN) ProcessElement(b nexmark.Bid, kc *weir.KeyedContext[int64], out *weir.Collector[Change[q19Row]]) error {
	if fl, ok := f.floor.Value(); ok && fl.after(&b) {
		return nil
	}
	top, _ := f.top.Value()
	changed, buf := q19Insert(&top, &b, f.buf[:0])
	f.buf = buf
	if !changed {
		return nil
	}
	f.top.Update(top)
	if top.N == q19N {
		last := &top.B[q19N-1]
		f.floor.Update(q19Floor{last.Price, last.DateTime, last.Bidder})
	}
	for _, c := range buf {
		out.Collect(c)
	}
	return nil
}
