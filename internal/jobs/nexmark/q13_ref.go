package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q13Ref is q13 by hand. It looks the bids up in the same indexed table
// as the query (a map would make the benchmark's baseline needlessly
// slow); q13_test.go checks the index against a map.
func q13Ref(p Params, n int64, out *RefOut) error {
	side, err := loadSideInput(p.SideInput)
	if err != nil {
		return err
	}
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		b := &e.Bid
		for _, v := range side.lookup(b.Auction) {
			Emit(out, q13Row{b.Auction, b.Bidder, b.Price, b.DateTime, v})
		}
	}
	return nil
}
