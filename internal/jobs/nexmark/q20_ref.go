package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q20Ref is q20 by hand: every auction seen so far by id (those of
// category 10 whole, the others as a marker), and the bids whose auction
// has not been seen yet (a bid can name an auction the generator has not
// reached). Both grow with the input, as the join's state does.
func q20Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	auctions := map[int64]q20Auction{}
	waiting := map[int64][]q20Bid{} // auction → bids
	for i := range n {
		g.At(i, &e)
		switch e.Kind {
		case nexmark.KindAuction:
			a := q20Keep(&e.Auction)
			auctions[e.Auction.ID] = a
			if a.Category == 10 {
				for _, b := range waiting[e.Auction.ID] {
					Emit(out, q20Row{b, a})
				}
			}
			delete(waiting, e.Auction.ID)
		case nexmark.KindBid:
			b := &e.Bid
			bid := q20Bid{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra}
			a, ok := auctions[b.Auction]
			switch {
			case !ok:
				waiting[b.Auction] = append(waiting[b.Auction], bid)
			case a.Category == 10:
				Emit(out, q20Row{bid, a})
			}
		}
	}
	return nil
}
