package nexmark

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q16 is the channel statistics report: q15 per channel and day, with the
// day's latest minute. DATE_FORMAT is computed in UTC (agg_common.go).
//
//	SELECT
//	    channel,
//	    DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
//	    max(DATE_FORMAT(`dateTime`, 'HH:mm')) as `minute`,
//	    count(*) AS total_bids,
//	    count(*) filter (where price < 10000) AS rank1_bids,
//	    count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
//	    count(*) filter (where price >= 1000000) AS rank3_bids,
//	    count(distinct bidder) AS total_bidders,
//	    count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
//	    count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
//	    count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
//	    count(distinct auction) AS total_auctions,
//	    count(distinct auction) filter (where price < 10000) AS rank1_auctions,
//	    count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
//	    count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
//	FROM bid
//	GROUP BY channel, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
//
// A changelog as q15's, computed in the same three keyed stages. The 'HH:mm' strings of one day order as the
// minutes of the day, so the max is kept as the largest minute.
func init() {
	register(&Query{
		Name: "q16",
		Columns: []string{"channel", "day", "minute", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
			"total_bidders", "rank1_bidders", "rank2_bidders", "rank3_bidders",
			"total_auctions", "rank1_auctions", "rank2_auctions", "rank3_auctions"},
		Changelog: true,
		Stateful:  true,
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			Sink(distinctSplit("q16", Bids(events), func(b *nexmark.Bid) q16Key { return q16Key{b.Channel, epochDay(b.DateTime)} },
				func(g q16Key, id int64) q16IDKey { return q16IDKey{g, id} }, newQ16Row), p)
			return nil
		},
		Reference: q16Ref,
	})
}

// q16Key is a group: a channel and an epoch day.
type q16Key struct {
	Channel string
	Day     int64
}

// StableHash hashes the channel (FNV-1a) and the day.
func (k q16Key) StableHash() uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(k.Channel); i++ {
		h ^= uint32(k.Channel[i])
		h *= 16777619
	}
	return mix64(h, k.Day)
}

// q16Row is one channel's and day's row.
type q16Row struct {
	Channel     string
	Day, Minute int64 // epoch day, minute of the day
	C           [12]int64
}

func newQ16Row(k q16Key, c *distinctCounts) q16Row {
	return q16Row{k.Channel, k.Day, c.MaxMinute, [12]int64{c.Bids[0], c.Bids[1], c.Bids[2], c.Bids[3],
		c.Bidders[0], c.Bidders[1], c.Bidders[2], c.Bidders[3],
		c.Auctions[0], c.Auctions[1], c.Auctions[2], c.Auctions[3]}}
}

func (r q16Row) AppendCSV(dst []byte) []byte {
	dst = nexmark.AppendField(dst, r.Channel)
	dst = append(dst, ',')
	dst = appendDay(dst, r.Day)
	dst = append(dst, ',')
	dst = appendMinute(dst, r.Minute)
	return appendInts(dst, r.C[:]...)
}
