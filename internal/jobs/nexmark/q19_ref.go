package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// q19Ref is q19 by hand: each auction's top list (in a slice indexed by a
// map, so a new auction does not allocate on its own); the final table is
// emitted as +I rows with their ranks at the end.
func q19Ref(p Params, n int64, out *RefOut) error {
	g := nexmark.NewGenerator(p.Gen)
	var e nexmark.Event
	index := map[int64]int32{}
	var tops []q19Top
	var buf []Change[q19Row]
	for i := range n {
		g.At(i, &e)
		if e.Kind != nexmark.KindBid {
			continue
		}
		b := &e.Bid
		j, ok := index[b.Auction]
		if !ok {
			j = int32(len(tops))
			index[b.Auction] = j
			tops = append(tops, q19Top{})
		}
		t := &tops[j]
		if t.N == q19N && q19Before(b, &t.B[q19N-1]) >= 0 {
			continue
		}
		_, buf = q19Insert(t, b, buf[:0])
	}
	for _, t := range tops {
		for r := range t.N {
			EmitChange(out, Insert, q19Row{t.B[r], r + 1})
		}
	}
	return nil
}
