package nexmark

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q15 is the bidding statistics report: per day, how many bids and how
// many distinct bidders and auctions, in total and per price range.
// DATE_FORMAT is computed in UTC (agg_common.go).
//
//	SELECT
//	     DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
//	     count(*) AS total_bids,
//	     count(*) filter (where price < 10000) AS rank1_bids,
//	     count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
//	     count(*) filter (where price >= 1000000) AS rank3_bids,
//	     count(distinct bidder) AS total_bidders,
//	     count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
//	     count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
//	     count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
//	     count(distinct auction) AS total_auctions,
//	     count(distinct auction) filter (where price < 10000) AS rank1_auctions,
//	     count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
//	     count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
//	FROM bid
//	GROUP BY DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
//
// A non-windowed GROUP BY: the output is a changelog, +I for a day's first
// bid, then -U old row / +U new row for each further bid. Groups are
// epoch days (the same groups as the day's string); the distinct counts
// are split by id over two keyed stages before the day's (distinctSplit).
func init() {
	register(&Query{
		Name: "q15",
		Columns: []string{"day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
			"total_bidders", "rank1_bidders", "rank2_bidders", "rank3_bidders",
			"total_auctions", "rank1_auctions", "rank2_auctions", "rank3_auctions"},
		Changelog: true,
		Stateful:  true,
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			Sink(distinctSplit("q15", Bids(events), func(b *nexmark.Bid) int64 { return epochDay(b.DateTime) },
				func(day, id int64) q15IDKey { return q15IDKey{day, id} }, newQ15Row), p)
			return nil
		},
		Reference: q15Ref,
	})
}

// q15Row is one day's row.
type q15Row struct {
	Day int64 // epoch day
	C   [12]int64
}

func newQ15Row(day int64, c *distinctCounts) q15Row {
	return q15Row{day, [12]int64{c.Bids[0], c.Bids[1], c.Bids[2], c.Bids[3],
		c.Bidders[0], c.Bidders[1], c.Bidders[2], c.Bidders[3],
		c.Auctions[0], c.Auctions[1], c.Auctions[2], c.Auctions[3]}}
}

func (r q15Row) AppendCSV(dst []byte) []byte {
	dst = appendDay(dst, r.Day)
	return appendInts(dst, r.C[:]...)
}
