package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q8Ref is q8 by hand. The generator's dateTimes do not decrease, so one
// window is open at a time: it collects the window's distinct (id, name)
// people and its sellers, and when the input passes the window's end
// emits the people who are sellers.
func q8Ref(p Params, n int64, out *RefOut) error {
	type person struct {
		id   int64
		name string
	}
	size := q8Size.Milliseconds()
	people := map[person]struct{}{}
	sellers := map[int64]struct{}{}
	start := int64(-1)
	flush := func() {
		for p := range people {
			if _, ok := sellers[p.id]; ok {
				Emit(out, q8Row{p.id, p.name, start})
			}
		}
		clear(people)
		clear(sellers)
	}
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	for i := range n {
		g.At(i, &e)
		if e.Kind == nexmark.KindBid {
			continue
		}
		t := e.DateTime()
		if s := floorDiv(t, size) * size; s != start {
			flush()
			start = s
		}
		if e.Kind == nexmark.KindPerson {
			people[person{e.Person.ID, e.Person.Name}] = struct{}{}
		} else {
			sellers[e.Auction.Seller] = struct{}{}
		}
	}
	flush()
	return nil
}
