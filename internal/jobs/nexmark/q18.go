package nexmark

import (
	"cmp"
	"context"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q18 finds the last bid of each bidder on each auction (a deduplication
// keeping the last row).
//
//	SELECT auction, bidder, price, channel, url, `dateTime`, extra
//	 FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY `dateTime` DESC) AS rank_number
//	       FROM bid)
//	 WHERE rank_number <= 1;
//
// The output is a changelog: +I for a (bidder, auction)'s first bid, then
// -U old bid / +U new bid each time a later bid replaces it. Flink keeps
// the later-arriving of two bids with the same dateTime, which depends on
// the arrival order; here "last" is a total order so that the result is
// the same for every parallelism and arrival order: the latest dateTime,
// then the highest price, then the greatest channel, url and extra
// (compared as bytes). A bid equal to the kept one changes nothing.
func init() {
	register(&Query{
		Name:      "q18",
		Columns:   []string{"auction", "bidder", "price", "channel", "url", "dateTime", "extra"},
		Changelog: true,
		Stateful:  true,
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			keyed := weir.KeyBy(Bids(events), func(b nexmark.Bid) q18Key { return q18Key{b.Bidder, b.Auction} })
			Sink(weir.Process(keyed, func() weir.KeyedProcessFunction[q18Key, nexmark.Bid, Change[q18Row]] {
				return &q18Dedup{}
			}).Name("q18-dedup").UID("q18-dedup"), p)
			return nil
		},
		Reference: q18Ref,
	})
}

// q18Key is a partition: a bidder and an auction.
type q18Key struct{ Bidder, Auction int64 }

// StableHash mixes the bidder and the auction.
func (k q18Key) StableHash() uint32 { return mix64(mix64(0, k.Bidder), k.Auction) }

// q18Later orders two bids of one (bidder, auction): +1 if a is later than
// b, -1 if earlier, 0 if they are equal.
func q18Later(a, b *nexmark.Bid) int {
	if c := cmp.Compare(a.DateTime, b.DateTime); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Price, b.Price); c != 0 {
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

// q18Row is a bid in the SELECT list's order.
type q18Row nexmark.Bid

func (r q18Row) AppendCSV(dst []byte) []byte { return appendBid(dst, (*nexmark.Bid)(&r)) }

// appendBid appends a bid's columns: auction, bidder, price, channel, url,
// dateTime, extra.
func appendBid(dst []byte, b *nexmark.Bid) []byte {
	dst = strconv.AppendInt(dst, b.Auction, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, b.Bidder, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, b.Price, 10)
	dst = append(dst, ',')
	dst = nexmark.AppendField(dst, b.Channel)
	dst = append(dst, ',')
	dst = nexmark.AppendField(dst, b.URL)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, b.DateTime, 10)
	dst = append(dst, ',')
	return nexmark.AppendField(dst, b.Extra)
}

// q18Dedup keeps each partition's last bid in a ValueState.
type q18Dedup struct {
	last weir.ValueState[nexmark.Bid]
}

func (f *q18Dedup) Open(_ context.Context, kc *weir.KeyedContext[q18Key]) (err error) {
	f.last, err = weir.GetValueState[nexmark.Bid](kc, "last")
	return err
}

func (f *q18Dedup) ProcessElement(b nexmark.Bid, kc *weir.KeyedContext[q18Key], out *weir.Collector[Change[q18Row]]) error {
	old, ok := f.last.Value()
	var changes [2]Change[q18Row]
	n := q18Step(&old, ok, &b, &changes)
	if n == 0 {
		return nil
	}
	for _, c := range changes[:n] {
		out.Collect(c)
	}
	f.last.Update(b)
	return nil
}

// q18Step is q18's per-bid logic as a pure function: given the kept bid
// old (ok false if none), it writes the changes bid b causes into out and
// returns their number; b is to be kept if it is not 0.
func q18Step(old *nexmark.Bid, ok bool, b *nexmark.Bid, out *[2]Change[q18Row]) int {
	switch {
	case !ok:
		out[0] = Change[q18Row]{Insert, q18Row(*b)}
		return 1
	case q18Later(b, old) > 0:
		out[0] = Change[q18Row]{UpdateBefore, q18Row(*old)}
		out[1] = Change[q18Row]{UpdateAfter, q18Row(*b)}
		return 2
	}
	return 0
}
