package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q3Ref is q3 by hand: the qualifying people by id, and the auctions of
// category 10 whose seller has not been seen yet (a seller's id can be
// one the generator has not reached). Both maps grow with the input, as
// the join's state does.
func q3Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	people := map[int64]q3Seller{}
	waiting := map[int64][]int64{} // seller → auction ids
	for i := range n {
		g.At(i, &e)
		switch e.Kind {
		case nexmark.KindPerson:
			pe := &e.Person
			if !q3State(pe.State) {
				continue
			}
			people[pe.ID] = q3Seller{pe.Name, pe.City, pe.State}
			for _, id := range waiting[pe.ID] {
				Emit(out, q3Row{pe.Name, pe.City, pe.State, id})
			}
			delete(waiting, pe.ID)
		case nexmark.KindAuction:
			a := &e.Auction
			if a.Category != 10 {
				continue
			}
			if s, ok := people[a.Seller]; ok {
				Emit(out, q3Row{s.Name, s.City, s.State, a.ID})
			} else {
				waiting[a.Seller] = append(waiting[a.Seller], a.ID)
			}
		}
	}
	return nil
}
