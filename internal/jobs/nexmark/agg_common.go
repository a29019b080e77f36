package nexmark

import (
	"context"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// Helpers shared by the non-windowed aggregates q15–q17 and the
// rank queries q18–q19.
//
// DATE_FORMAT(dateTime, 'yyyy-MM-dd') and DATE_FORMAT(dateTime, 'HH:mm')
// are computed in UTC. A day is held as its epoch day number (days since
// 1970-01-01) and a minute as its minute of the day: both are integers, so
// grouping by them needs no string, and the text is only produced by
// AppendCSV, with civil-date arithmetic (no time.Time, no allocation).
// Grouping by the day number is the same as grouping by the day's string
// (one is a bijection of the other), and the 'HH:mm' strings of one day
// order as their minutes do, so max(DATE_FORMAT(dateTime, 'HH:mm')) is the
// largest minute of the day.

const msPerDay = 24 * 60 * 60 * 1000

// epochDay is the UTC day of the epoch-ms time t.
func epochDay(t int64) int64 {
	d := t / msPerDay
	if t%msPerDay < 0 {
		d--
	}
	return d
}

// minuteOfDay is the UTC minute of the day (0 … 1439) of the epoch-ms time t.
func minuteOfDay(t int64) int64 {
	m := t % msPerDay
	if m < 0 {
		m += msPerDay
	}
	return m / 60_000
}

// appendPadded appends v with at least width digits (v ≥ 0).
func appendPadded(dst []byte, v int64, width int) []byte {
	for p, w := int64(10), 1; w < width; p, w = p*10, w+1 {
		if v < p {
			dst = append(dst, '0')
		}
	}
	return strconv.AppendInt(dst, v, 10)
}

// appendDay appends DATE_FORMAT(t, 'yyyy-MM-dd') of a time on epoch day
// day (formatDate: Java's year of era).
func appendDay(dst []byte, day int64) []byte {
	t := formatDate(day)
	return append(dst, t.b[:t.n]...)
}

// appendMinute appends DATE_FORMAT(t, 'HH:mm') of a time in minute
// minute of its day.
func appendMinute(dst []byte, minute int64) []byte {
	dst = appendPadded(dst, minute/60, 2)
	dst = append(dst, ':')
	return appendPadded(dst, minute%60, 2)
}

// The price ranges of q15–q17's FILTER clauses: rank1 price < 10 000,
// rank2 10 000 ≤ price < 1 000 000, rank3 price ≥ 1 000 000.
func priceRank(price int64) int {
	switch {
	case price < 10_000:
		return 1
	case price < 1_000_000:
		return 2
	}
	return 3
}

// rankMask is the set of count columns a bid of this price counts in:
// bit 0 the total, bit r its rank r.
func rankMask(price int64) uint8 { return 1 | 1<<priceRank(price) }

// appendInts appends each of vs preceded by a comma.
func appendInts(dst []byte, vs ...int64) []byte {
	for _, v := range vs {
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, v, 10)
	}
	return dst
}

// mix64 folds an integer into a running 32-bit key hash (stable across
// processes: no seed).
func mix64(h uint32, v int64) uint32 {
	x := uint64(v) ^ uint64(h)<<32
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return uint32(x) ^ uint32(x>>32)
}

// emitUpdate emits a non-windowed GROUP BY's change of one group's row:
// +I for a new group, else -U old / +U new, nothing when the row did not
// change (as Flink, which drops an update whose row equals the old one).
func emitUpdate[R interface {
	Row
	comparable
}](out *weir.Collector[Change[R]], existed bool, old, cur R) {
	switch {
	case !existed:
		out.Collect(Change[R]{Insert, cur})
	case old != cur:
		out.Collect(Change[R]{UpdateBefore, old})
		out.Collect(Change[R]{UpdateAfter, cur})
	}
}

// distinctCounts are the aggregates of q15 and q16 for one group: per
// column set c (0 all bids, 1–3 the price ranks) the bids, the distinct
// bidders and the distinct auctions; and q16's latest minute of the day.
type distinctCounts struct {
	Bids, Bidders, Auctions [4]int64
	MaxMinute               int64
}

// add counts a bid whose columns are mask (rankMask), with seen bits
// bidderSeen and auctionSeen of the column sets its bidder and auction
// were already counted in. It returns the new seen bits.
func (c *distinctCounts) add(mask, bidderSeen, auctionSeen uint8) (uint8, uint8) {
	for i := range 4 {
		bit := uint8(1) << i
		if mask&bit == 0 {
			continue
		}
		c.Bids[i]++
		if bidderSeen&bit == 0 {
			c.Bidders[i]++
		}
		if auctionSeen&bit == 0 {
			c.Auctions[i]++
		}
	}
	return bidderSeen | mask, auctionSeen | mask
}

// appendCounts appends the twelve count columns, each after a comma.
func (c *distinctCounts) appendCounts(dst []byte) []byte {
	dst = appendInts(dst, c.Bids[0], c.Bids[1], c.Bids[2], c.Bids[3])
	dst = appendInts(dst, c.Bidders[0], c.Bidders[1], c.Bidders[2], c.Bidders[3])
	return appendInts(dst, c.Auctions[0], c.Auctions[1], c.Auctions[2], c.Auctions[3])
}

// distinctRef is the reference's state of one q15/q16 group.
type distinctRef struct {
	c                 distinctCounts
	bidders, auctions map[int64]uint8
}

func (g *distinctRef) add(bidder, auction, price int64) {
	if g.bidders == nil {
		g.bidders = map[int64]uint8{}
		g.auctions = map[int64]uint8{}
	}
	b, a := g.c.add(rankMask(price), g.bidders[bidder], g.auctions[auction])
	g.bidders[bidder] = b
	g.auctions[auction] = a
}

// distinctDelta is what a bid adds to its q15/q16 group, worked out by
// the split pipeline's first two stages: Mask the count columns it counts
// in, BidderNew and AuctionNew those its bidder and auction were not yet
// counted in.
type distinctDelta[G any] struct {
	G                           G
	Bidder, Auction, Minute     int64
	Mask, BidderNew, AuctionNew uint8
}

// distinctSeen is a split stage: keyed by (group, id), it keeps the id's
// seen bits in a ValueState (one store key per id, which the lsm
// backend's write buffer caches, where a MapState entry is a Pebble read)
// and sets the delta's new bits.
type distinctSeen[K comparable, G any] struct {
	auction bool
	seen    weir.ValueState[uint8]
}

func (f *distinctSeen[K, G]) Open(_ context.Context, kc *weir.KeyedContext[K]) (err error) {
	f.seen, err = weir.GetValueState[uint8](kc, "seen")
	return err
}

func (f *distinctSeen[K, G]) ProcessElement(d distinctDelta[G], kc *weir.KeyedContext[K], out *weir.Collector[distinctDelta[G]]) error {
	s, _ := f.seen.Value()
	if n := d.Mask &^ s; n != 0 {
		f.seen.Update(s | n)
		if f.auction {
			d.AuctionNew = n
		} else {
			d.BidderNew = n
		}
	}
	out.Collect(d)
	return nil
}

// distinctSum is the split pipeline's last stage: keyed by the group, it
// adds the deltas to the group's counts and emits the changelog.
type distinctSum[G comparable, R interface {
	Row
	comparable
}] struct {
	row    func(G, *distinctCounts) R
	counts weir.ValueState[distinctCounts]
}

func (f *distinctSum[G, R]) Open(_ context.Context, kc *weir.KeyedContext[G]) (err error) {
	f.counts, err = weir.GetValueState[distinctCounts](kc, "counts")
	return err
}

func (f *distinctSum[G, R]) ProcessElement(d distinctDelta[G], kc *weir.KeyedContext[G], out *weir.Collector[Change[R]]) error {
	c, existed := f.counts.Value()
	old := c
	for i := range 4 {
		bit := uint8(1) << i
		if d.Mask&bit != 0 {
			c.Bids[i]++
		}
		if d.BidderNew&bit != 0 {
			c.Bidders[i]++
		}
		if d.AuctionNew&bit != 0 {
			c.Auctions[i]++
		}
	}
	c.MaxMinute = max(c.MaxMinute, d.Minute)
	f.counts.Update(c)
	emitUpdate(out, existed, f.row(d.G, &old), f.row(d.G, &c))
	return nil
}

// distinctSplit builds q15's and q16's aggregate as three keyed stages:
// (group, bidder) → (group, auction) → group. The first two keep each
// id's seen bits (the column sets it was counted in) and mark the bits a
// bid adds; the last adds the deltas to the group's counts and emits one
// change per bid: +I for the group's first bid, else -U old / +U new (the
// counts change with every bid, so nothing is suppressed; coalescing a
// batch's bids would need a hook at the end of a batch, which the API
// does not have). Splitting the distinct sets by id, as Flink's
// split-distinct optimisation does, keeps every state access a ValueState
// one, which the lsm backend's write buffer serves from memory, where a
// MapState[id] per group is a Pebble point read and write per bid: with
// lsm q15 ran at 143k events per core-second as one stage with two
// MapStates and 304k split (q16: 73k and 135k); with heap state the extra
// exchanges cost q15 682k → 556k, q16 524k → 376k. The final counts are
// sums, so the order in which deltas from different subtasks reach the
// last stage does not change the final table.
func distinctSplit[G comparable, KI comparable, R interface {
	Row
	comparable
}](name string, bids weir.Stream[nexmark.Bid], group func(*nexmark.Bid) G, idKey func(G, int64) KI, row func(G, *distinctCounts) R) weir.Stream[Change[R]] {
	deltas := weir.Map(bids, func(b nexmark.Bid) distinctDelta[G] {
		return distinctDelta[G]{G: group(&b), Bidder: b.Bidder, Auction: b.Auction, Minute: minuteOfDay(b.DateTime), Mask: rankMask(b.Price)}
	}).Name(name + "-group").UID(name + "-group")
	byBidder := weir.Process(weir.KeyBy(deltas, func(d distinctDelta[G]) KI { return idKey(d.G, d.Bidder) }),
		func() weir.KeyedProcessFunction[KI, distinctDelta[G], distinctDelta[G]] {
			return &distinctSeen[KI, G]{}
		}).Name(name + "-bidders").UID(name + "-bidders")
	byAuction := weir.Process(weir.KeyBy(byBidder, func(d distinctDelta[G]) KI { return idKey(d.G, d.Auction) }),
		func() weir.KeyedProcessFunction[KI, distinctDelta[G], distinctDelta[G]] {
			return &distinctSeen[KI, G]{auction: true}
		}).Name(name + "-auctions").UID(name + "-auctions")
	return weir.Process(weir.KeyBy(byAuction, func(d distinctDelta[G]) G { return d.G }),
		func() weir.KeyedProcessFunction[G, distinctDelta[G], Change[R]] { return &distinctSum[G, R]{row: row} }).Name(name + "-agg").UID(name + "-agg")
}

// q15IDKey is a (day, bidder or auction) key of q15's split stages.
type q15IDKey struct{ Day, ID int64 }

// StableHash mixes the day and the id.
func (k q15IDKey) StableHash() uint32 { return mix64(mix64(0, k.Day), k.ID) }

// q16IDKey is a (channel, day, bidder or auction) key of q16's split
// stages.
type q16IDKey struct {
	G  q16Key
	ID int64
}

// StableHash mixes the group's hash and the id.
func (k q16IDKey) StableHash() uint32 { return mix64(k.G.StableHash(), k.ID) }
