package barrier

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestUnalignedForcedMatchesAligned checks invariant I6: when every barrier
// is forced aligned (final or savepoint), Unaligned in both modes returns
// exactly Aligned's actions on seeded random interleavings, and ignores
// announcements and alignment timeouts. Aligned's own randomized test
// compares it with the reference model, so this reuses that model.
func TestUnalignedForcedMatchesAligned(t *testing.T) {
	coretest.Seeds{N: 1000, Short: 200}.Run(t, func(seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 0x666f72636564))
		n := 1 + rng.IntN(4)
		maxID := checkpoint.ID(2 + rng.IntN(6))
		kind := checkpoint.Final
		if rng.IntN(2) == 0 {
			kind = checkpoint.Savepoint
		}
		chans := genChannels(rng, n, maxID)
		ref := NewAligned(n)
		hs := []*Unaligned{NewUnaligned(n, 0), NewUnaligned(n, 50*time.Millisecond)}
		var hist []string
		check := func(ev Event, want []string) {
			hist = append(hist, fmt.Sprintf("%#v", ev))
			for _, h := range hs {
				got := render(h.Step(ev))
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d timeout %v: %v gave %q, Aligned %q\nhistory: %q", seed, h.timeout, ev, got, want, hist)
				}
				id, ok := h.Pending()
				rid, rok := ref.Pending()
				if id != rid || ok != rok {
					t.Fatalf("seed %d: Pending()=%d,%v, Aligned %d,%v\nhistory: %q", seed, id, ok, rid, rok, hist)
				}
				for c := range n {
					if h.Blocked(c) != ref.Blocked(c) || h.Recording(c) {
						t.Fatalf("seed %d: channel %d blocked=%v recording=%v, Aligned blocked=%v\nhistory: %q",
							seed, c, h.Blocked(c), h.Recording(c), ref.Blocked(c), hist)
					}
				}
			}
		}
		for {
			if rng.IntN(100) < 5 {
				ev := AbortRequested{ID: checkpoint.ID(1 + rng.IntN(int(maxID)+1))}
				check(ev, render(ref.Step(ev)))
			}
			if rng.IntN(100) < 5 {
				check(AlignmentTimeout{ID: checkpoint.ID(rng.IntN(int(maxID) + 2))}, nil)
			}
			var ready []int
			for c, q := range chans {
				if len(q) > 0 && !ref.Blocked(c) {
					ready = append(ready, c)
				}
			}
			if len(ready) == 0 {
				id, ok := ref.Pending()
				if !ok {
					break
				}
				ev := AbortRequested{ID: id}
				check(ev, render(ref.Step(ev)))
				continue
			}
			c := ready[rng.IntN(len(ready))]
			it := chans[c][0]
			chans[c] = chans[c][1:]
			if it.record {
				continue
			}
			ev := it.ev
			if b, ok := ev.(BarrierArrived); ok {
				b.Barrier.Kind = kind
				ev = b
				if rng.IntN(4) == 0 {
					check(BarrierAnnounced{Channel: c, Barrier: b.Barrier}, nil)
				}
			}
			check(ev, render(ref.Step(ev)))
		}
	})
}

func render(as []Action) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}
