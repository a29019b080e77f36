package lsm

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// TestTimersRescaleFullSnapshots rescales full snapshots of stores with
// both timer sets populated, distinct from each other, 2 -> 3 and 3 -> 1,
// and checks each new store fires exactly the timers of its key groups, in
// the order the heap backend restored from the same files fires them.
func TestTimersRescaleFullSnapshots(t *testing.T) {
	for _, c := range []struct{ from, to int }{{2, 3}, {3, 1}} {
		t.Run(fmt.Sprintf("%d-to-%d", c.from, c.to), func(t *testing.T) {
			var srcs []state.RestoreSource
			for i := range c.from {
				kgs := keygroup.RangeFor(testMaxP, c.from, i)
				f := newLSM(t, kgs)
				f.register(t)
				for k := range 300 {
					if kgs.Contains(f.kg(k)) {
						f.set(k)
						f.b.Timers().Register(int64(k % 23))
						f.b.EventTimers().Register(int64(100 + k%11))
						if k%3 == 0 {
							f.b.EventTimers().Register(int64(k % 23)) // same ts as the processing-time one
						}
					}
				}
				srcs = append(srcs, snapshotBytes(t, f.b))
			}
			var pt, ev int
			for i := range c.to {
				kgs := keygroup.RangeFor(testMaxP, c.to, i)
				g, h := restore(t, newLSM, kgs, srcs...), restore(t, heapMaker, kgs, srcs...)
				if a, b := snapshotBytes(t, g.b), snapshotBytes(t, h.b); !sameSource(a, b) {
					t.Fatalf("subtask %d (%s): lsm and heap snapshots differ after the rescale", i, kgs)
				}
				gp, ge := firedTimers(g, 1e9), firedEvents(g, 1e9)
				if hp, he := firedTimers(h, 1e9), firedEvents(h, 1e9); !reflect.DeepEqual(gp, hp) || !reflect.DeepEqual(ge, he) {
					t.Fatalf("subtask %d (%s): lsm fired %v and %v, heap %v and %v", i, kgs, gp, ge, hp, he)
				}
				for _, fs := range [][][2]int64{gp, ge} {
					for _, kt := range fs {
						if !kgs.Contains(g.kg(int(kt[0]))) {
							t.Fatalf("subtask %d (%s) fired a timer of key %d, key group %d", i, kgs, kt[0], g.kg(int(kt[0])))
						}
					}
				}
				pt, ev = pt+len(gp), ev+len(ge)
			}
			if pt != 300 || ev != 400 {
				t.Fatalf("fired %d processing-time and %d event-time timers, want 300 and 400", pt, ev)
			}
		})
	}
}

// TestRestoreWithoutEventTimers restores into the store a snapshot with
// no event-time section: the format of checkpoints written before event
// time (package state checks that its bytes equal that format).
func TestRestoreWithoutEventTimers(t *testing.T) {
	h := newHeap(t, fullRange)
	h.register(t)
	for k := range 20 {
		h.set(k)
		h.val.Update(int64(k))
		h.b.Timers().Register(int64(k))
	}
	src := snapshotBytes(t, h.b)
	for _, kgo := range src.KeyGroups {
		if err := state.ParseBlock(kgo.KeyGroup, src.Data[kgo.Offset:kgo.Offset+kgo.Length], func(_ string, k state.Kind, _ []byte) error {
			if k == state.KindEventTimers {
				t.Fatal("snapshot has an event-time section")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	g := restore(t, newLSM, fullRange, src)
	if n := g.b.EventTimers().Len(); n != 0 {
		t.Fatalf("restored %d event-time timers", n)
	}
	if got := firedTimers(g, 100); len(got) != 20 {
		t.Fatalf("restored %d processing-time timers, want 20", len(got))
	}
	if v := g.read(7); !v.HasVal || v.Val != 7 {
		t.Fatalf("restored value %+v", v)
	}
}
