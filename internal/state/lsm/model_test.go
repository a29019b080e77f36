package lsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// TestRandomOpsHeapVersusLSM applies the same seeded random operations to
// the heap backend (the reference) and the LSM backend and requires, after
// every operation, the same reads for the key it touched, the same fired
// timers, and at every snapshot byte-identical canonical snapshots, also
// when the snapshot is written while both backends keep changing. Each
// snapshot is then restored crosswise (heap bytes into lsm and lsm bytes
// into heap) into a random key-group split, and the restored backends must
// agree with the originals' state at the snapshot. The write buffer is
// tiny (it evicts all the time), large (it never evicts: only snapshots,
// Keys and restores write it back) and off.
func TestRandomOpsHeapVersusLSM(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5}
	if testing.Short() {
		seeds = seeds[:2]
	}
	buffers := []struct {
		name string
		size int64
	}{{"tiny", tinyWriteBuffer}, {"large", 8 << 20}, {"off", -1}}
	for _, wb := range buffers {
		for _, seed := range seeds {
			t.Run(fmt.Sprint("buffer=", wb.name, "/seed=", seed), func(t *testing.T) {
				randomOps(t, seed, func(o *Options) { o.WriteBufferSize = wb.size })
			})
		}
	}
}

func randomOps(t *testing.T, seed uint64, opt func(*Options)) {
	{
		{
			rng := rand.New(rand.NewPCG(seed, 99))
			heap, lsm := newHeap(t, fullRange), newLSM(t, fullRange, opt)
			heap.register(t)
			lsm.register(t)
			const universe = 48
			now := int64(0)
			for step := range 3000 {
				k := rng.IntN(universe)
				op, x := rng.IntN(20), rng.Int64N(100)
				for _, f := range []*fixture{heap, lsm} {
					apply(f, op, k, x, step)
				}
				// Reading a map iterates it, which writes its buffered
				// entries back; most steps look up entries instead, so
				// that buffered map entries live across many operations.
				if step%7 == 0 {
					if h, l := heap.read(k*1021), lsm.read(k*1021); !reflect.DeepEqual(h, l) {
						t.Fatalf("step %d op %d key %d: heap %+v, lsm %+v", step, op, k, h, l)
					}
				} else if h, l := heap.lookup(k*1021, x), lsm.lookup(k*1021, x); h != l {
					t.Fatalf("step %d op %d key %d: heap %+v, lsm %+v", step, op, k, h, l)
				}
				if err := lsm.b.Err(); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if step%97 == 0 {
					now += 5
					if h, l := firedTimers(heap, now), firedTimers(lsm, now); !reflect.DeepEqual(h, l) {
						t.Fatalf("step %d: timers fired at %d: heap %v, lsm %v", step, now, h, l)
					}
					// The watermark lags the clock, so both sets have due
					// and pending timers at once.
					if h, l := firedEvents(heap, now-30), firedEvents(lsm, now-30); !reflect.DeepEqual(h, l) {
						t.Fatalf("step %d: event timers fired at %d: heap %v, lsm %v", step, now-30, h, l)
					}
				}
				if step%401 == 400 {
					checkKeys(t, heap, lsm, step)
					checkSnapshots(t, rng, heap, lsm, universe, step)
				}
			}
		}
	}
}

// apply performs operation op on key k; both backends get the same call.
// Keys and user keys vary in encoded length, so that the canonical order
// (length first) differs from plain byte order.
func apply(f *fixture, op, k int, x int64, step int) {
	f.set(k * 1021) // zigzag varints of 1 to 3 bytes
	uk := fmt.Sprint(x % 7 * 1111 % 2000)
	if x%5 == 0 {
		uk = strings.Repeat("l", 250+int(x%10)) // length varint of 255 and 256: 0xff01 > 0x8002
	}
	switch op {
	case 0, 1:
		f.val.Update(x)
	case 2:
		f.val.Clear()
	case 3, 4:
		f.list.Add(fmt.Sprint("e", step))
	case 5:
		f.list.AddAll([]string{fmt.Sprint("a", x), "", fmt.Sprint("b", step)})
	case 6:
		f.list.Update([]string{fmt.Sprint("r", x)})
	case 7:
		f.list.Clear()
	case 8, 9:
		f.mp.Put(uk, int(x))
	case 10:
		f.mp.Remove(uk)
	case 11:
		f.mp.Clear()
	case 12:
		f.sum.Add(x)
	case 13:
		f.sum.Clear()
	case 14:
		f.b.Timers().Register(x)
	case 15:
		f.b.Timers().Delete(x)
	case 16:
		f.b.EventTimers().Register(x)
	case 17:
		f.b.EventTimers().Delete(x)
	case 18:
		// A window's life: read (absent), write, then delete, often
		// without being written back in between.
		if _, ok := f.mp.Get(uk); !ok {
			f.mp.Put(uk, int(x))
		}
	case 19:
		if _, ok := f.mp.Get(uk); ok {
			f.mp.Remove(uk)
		}
	}
}

func checkSnapshots(t *testing.T, rng *rand.Rand, heap, lsm *fixture, universe, step int) {
	t.Helper()
	want := heap.dump(modelKeys(universe))
	hs, ls := heap.b.Snapshot(), lsm.b.Snapshot()
	// Change both after the barrier: the snapshots must not see it.
	for i := range 50 {
		k, op := rng.IntN(universe), rng.IntN(20)
		apply(heap, op, k, int64(i), step+i)
		apply(lsm, op, k, int64(i), step+i)
	}
	hb, lb := writeSnapshot(t, hs), writeSnapshot(t, ls)
	hs.Release()
	ls.Release()
	if !sameSource(hb, lb) {
		t.Fatalf("step %d: canonical snapshots differ:\nheap %x\nlsm  %x", step, hb.Data, lb.Data)
	}
	// Restore crosswise into two subtasks that split the key groups.
	cut := 1 + rng.IntN(testMaxP-1)
	for _, r := range []keygroup.Range{{Start: 0, End: cut}, {Start: cut, End: testMaxP}} {
		fromHeap := restore(t, newLSM, r, hb)
		fromLSM := restore(t, heapMaker, r, lb)
		for _, f := range []*fixture{fromHeap, fromLSM} {
			got := f.dump(modelKeys(universe))
			for k, v := range want {
				if r.Contains(f.kg(k)) && !reflect.DeepEqual(got[k], v) {
					t.Fatalf("step %d: %s restored into %s: key %d = %+v, want %+v", step, f.name, r, k, got[k], v)
				}
			}
		}
		// Restored backends snapshot to the same bytes again.
		if a, b := snapshotBytes(t, fromHeap.b), snapshotBytes(t, fromLSM.b); !sameSource(a, b) {
			t.Fatalf("step %d: snapshots after a crosswise restore into %s differ", step, r)
		}
	}
}

func modelKeys(universe int) []int {
	keys := make([]int, universe)
	for i := range keys {
		keys[i] = i * 1021
	}
	return keys
}

// TestWriteBlocksConcurrentWithWrites writes an lsm snapshot on another
// goroutine while the task goroutine keeps changing every state and the
// timers (run with -race), and requires the bytes of a heap snapshot taken
// at the same point.
func TestWriteBlocksConcurrentWithWrites(t *testing.T) {
	heap, lsm := newHeap(t, fullRange), newLSM(t, fullRange)
	heap.register(t)
	lsm.register(t)
	for i := range 500 {
		for _, f := range []*fixture{heap, lsm} {
			apply(f, i%16, i%40, int64(i), i)
		}
	}
	want := snapshotBytes(t, heap.b)
	snap := lsm.b.Snapshot()
	done := make(chan state.RestoreSource)
	var werr error
	go func() {
		var buf bytes.Buffer
		offs, err := snap.WriteBlocks(&buf)
		snap.Release()
		werr = err
		done <- state.RestoreSource{Data: buf.Bytes(), KeyGroups: offs}
	}()
	for i := range 2000 {
		apply(lsm, i%16, i%40, int64(-i), i)
	}
	got := <-done
	if werr != nil {
		t.Fatal(werr)
	}
	if !sameSource(got, want) {
		t.Fatal("a snapshot written during writes differs from the state at Snapshot")
	}
}

// checkKeys compares Backend.Keys of every state: the same keys with the
// same key groups, each once, in key-group order.
func checkKeys(t *testing.T, heap, lsm *fixture, step int) {
	t.Helper()
	for _, name := range []string{"val", "list", "map", "sum", "nosuchstate"} {
		var sets [2][][2]int
		for i, f := range []*fixture{heap, lsm} {
			lastKG := -1
			for k, kg := range f.b.Keys(name) {
				if kg < lastKG || kg != f.kg(k) {
					t.Fatalf("step %d: %s Keys(%s) yielded key %d with key group %d after %d", step, f.name, name, k, kg, lastKG)
				}
				lastKG = kg
				sets[i] = append(sets[i], [2]int{k, kg})
			}
			slices.SortFunc(sets[i], func(a, b [2]int) int { return a[0] - b[0] })
			if len(slices.Compact(slices.Clone(sets[i]))) != len(sets[i]) {
				t.Fatalf("step %d: %s Keys(%s) yielded a key twice", step, f.name, name)
			}
		}
		if !reflect.DeepEqual(sets[0], sets[1]) {
			t.Fatalf("step %d: Keys(%s): heap %v, lsm %v", step, name, sets[0], sets[1])
		}
		if name == "map" && len(sets[0]) == 0 {
			t.Fatalf("step %d: no map keys: the comparison proves nothing", step)
		}
	}
}
