package nexmark

import (
	"context"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q20 expands each bid with its auction, for auctions of category 10: a
// regular inner join of two append-only inputs, so its output is
// append-only.
//
//	SELECT
//	    auction, bidder, price, channel, url, B.`dateTime`, B.extra,
//	    itemName, description, initialBid, reserve, A.`dateTime`, expires, seller, category, A.extra
//	FROM
//	    bid AS B INNER JOIN auction AS A on B.auction = A.id
//	WHERE A.category = 10;
//
// Both sides are keyed by the auction id. Every auction is kept in keyed
// state: one of category 10 whole (later bids join it), any other as its
// category alone, a marker that drops its bids at once (were such
// auctions filtered out before the join, as Flink does, their bids would
// wait for them forever). A bid whose auction has not arrived waits in a
// list until it does. As in Flink's regular join nothing expires: the
// join has no time condition, so an auction joins its bids whenever they
// come.
func init() {
	register(&Query{
		Name: "q20",
		Columns: []string{"auction", "bidder", "price", "channel", "url", "bid_dateTime", "bid_extra",
			"itemName", "description", "initialBid", "reserve", "auction_dateTime", "expires", "seller", "category", "auction_extra"},
		Stateful:  true,
		Build:     buildQ20,
		Reference: q20Ref,
	})
}

// q20Bid is a bid as q20 outputs it (all its columns).
type q20Bid struct {
	Auction, Bidder, Price int64
	Channel, URL           string
	DateTime               int64
	Extra                  string
}

// q20Auction is an auction as q20 keeps it: all the columns it outputs
// for category 10, only Category otherwise.
type q20Auction struct {
	ItemName, Description string
	InitialBid, Reserve   int64
	DateTime, Expires     int64
	Seller, Category      int64
	Extra                 string
}

type q20Row struct {
	B q20Bid
	A q20Auction
}

func (r q20Row) AppendCSV(dst []byte) []byte {
	b, a := &r.B, &r.A
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
	dst = nexmark.AppendField(dst, b.Extra)
	dst = append(dst, ',')
	dst = nexmark.AppendField(dst, a.ItemName)
	dst = append(dst, ',')
	dst = nexmark.AppendField(dst, a.Description)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, a.InitialBid, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, a.Reserve, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, a.DateTime, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, a.Expires, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, a.Seller, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, a.Category, 10)
	dst = append(dst, ',')
	return nexmark.AppendField(dst, a.Extra)
}

// q20Keep is what q20 keeps of auction a: all of it for category 10, its
// category alone otherwise.
func q20Keep(a *nexmark.Auction) q20Auction {
	if a.Category != 10 {
		return q20Auction{Category: a.Category}
	}
	return q20Auction{a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra}
}

func buildQ20(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
	bids := weir.FlatMap(events, func(e nexmark.Event, out *weir.Collector[q20Bid]) error {
		if e.Kind == nexmark.KindBid {
			b := &e.Bid
			out.Collect(q20Bid{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra})
		}
		return nil
	}).Name("q20-bids").UID("q20-bids")
	auctions := weir.FlatMap(events, func(e nexmark.Event, out *weir.Collector[q20AuctionIn]) error {
		if e.Kind == nexmark.KindAuction {
			out.Collect(q20AuctionIn{e.Auction.ID, q20Keep(&e.Auction)})
		}
		return nil
	}).Name("q20-auctions").UID("q20-auctions")
	joined := weir.CoProcess(weir.ConnectKeyed(
		weir.KeyBy(bids, func(b q20Bid) int64 { return b.Auction }),
		weir.KeyBy(auctions, func(a q20AuctionIn) int64 { return a.ID }),
	), func() weir.KeyedCoProcessFunction[int64, q20Bid, q20AuctionIn, q20Row] { return &q20Join{} }).Name("q20-join").UID("q20-join")
	Sink(joined, p)
	return nil
}

// q20AuctionIn is an auction on its way to the join: its id (the key)
// and what the join keeps of it.
type q20AuctionIn struct {
	ID int64
	A  q20Auction
}

// q20Join is the join, keyed by the auction id.
type q20Join struct {
	auction weir.ValueState[q20Auction] // once arrived (any category)
	waiting weir.ListState[q20Bid]      // bids that came first
}

func (j *q20Join) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	if j.auction, err = weir.GetValueState[q20Auction](kc, "auction"); err != nil {
		return err
	}
	j.waiting, err = weir.GetListState[q20Bid](kc, "waiting")
	return err
}

// ProcessElement1 takes a bid: it joins its auction if that is of
// category 10, is dropped if not, and waits if the auction has not come.
func (j *q20Join) ProcessElement1(b q20Bid, _ *weir.KeyedContext[int64], out *weir.Collector[q20Row]) error {
	a, ok := j.auction.Value()
	switch {
	case !ok:
		j.waiting.Add(b)
	case a.Category == 10:
		out.Collect(q20Row{b, a})
	}
	return nil
}

// ProcessElement2 takes an auction (each arrives once): it joins the
// bids that came first if it is of category 10, and stays for later ones.
func (j *q20Join) ProcessElement2(a q20AuctionIn, _ *weir.KeyedContext[int64], out *weir.Collector[q20Row]) error {
	j.auction.Update(a.A)
	if a.A.Category == 10 {
		for _, b := range j.waiting.Get() {
			out.Collect(q20Row{b, a.A})
		}
	}
	j.waiting.Clear()
	return nil
}
