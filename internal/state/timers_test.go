package state

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/keygroup"
)

type fired struct {
	Key int
	KG  int
	TS  int64
}

func popAll(f *fixture, now int64) []fired { return popSet(f, f.b.Timers(), now) }

// popSet fires the due timers of one set of f's backend.
func popSet(f *fixture, tm *Timers[int], now int64) []fired {
	var out []fired
	tm.PopDue(now, func(k, kg int, ts int64) {
		if f.b.CurrentKey() != k || f.b.CurrentKeyGroup() != kg {
			panic("PopDue did not set the current key")
		}
		out = append(out, fired{k, kg, ts})
	})
	return out
}

func TestTimersOrderDedupAndDelete(t *testing.T) {
	f := newFixture(t, fullRange)
	tm := f.b.Timers()
	if _, ok := tm.Next(); ok {
		t.Fatal("Next on no timers reported one")
	}
	reg := func(k int, ts int64) { f.set(k); tm.Register(ts) }
	reg(1, 30)
	reg(2, 10)
	reg(1, 30) // duplicate
	reg(3, 20)
	reg(2, 40)
	reg(4, 10)
	f.set(3)
	tm.Delete(20)
	tm.Delete(99) // not registered: no effect
	if tm.Len() != 4 {
		t.Fatalf("Len = %d, want 4", tm.Len())
	}
	if ts, ok := tm.Next(); !ok || ts != 10 {
		t.Fatalf("Next = %d, %v; want 10, true", ts, ok)
	}
	if got := popAll(f, 9); len(got) != 0 {
		t.Fatalf("fired before due: %v", got)
	}
	// Equal timestamps fire by key group; compute the expected order.
	first, second := fired{2, f.kg(2), 10}, fired{4, f.kg(4), 10}
	if second.KG < first.KG {
		first, second = second, first
	}
	want := []fired{first, second, {1, f.kg(1), 30}}
	if got := popAll(f, 30); !reflect.DeepEqual(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if ts, ok := tm.Next(); !ok || ts != 40 {
		t.Fatalf("Next = %d, %v; want 40, true", ts, ok)
	}
	if got := popAll(f, 100); !reflect.DeepEqual(got, []fired{{2, f.kg(2), 40}}) {
		t.Fatalf("fired %v, want key 2 at 40", got)
	}
	if _, ok := tm.Next(); ok || tm.Len() != 0 {
		t.Fatalf("timers left: Len %d", tm.Len())
	}
}

func TestTimerRegisteredByCallbackFires(t *testing.T) {
	f := newFixture(t, fullRange)
	tm := f.b.Timers()
	f.set(5)
	tm.Register(10)
	var got []fired
	tm.PopDue(100, func(k, kg int, ts int64) {
		got = append(got, fired{k, kg, ts})
		if ts == 10 {
			tm.Register(50)  // due: fires in this call
			tm.Register(500) // not due
			f.set(6)
			tm.Register(20)
		}
	})
	want := []fired{{5, f.kg(5), 10}, {6, f.kg(6), 20}, {5, f.kg(5), 50}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if ts, ok := tm.Next(); !ok || ts != 500 || tm.Len() != 1 {
		t.Fatalf("Next = %d, %v, Len %d; want 500, true, 1", ts, ok, tm.Len())
	}
}

func TestTimerDeleteThenRegisterFiresOnce(t *testing.T) {
	f := newFixture(t, fullRange)
	tm := f.b.Timers()
	f.set(1)
	tm.Register(5)
	tm.Delete(5)
	tm.Register(5)
	if got := popAll(f, 5); !reflect.DeepEqual(got, []fired{{1, f.kg(1), 5}}) {
		t.Fatalf("fired %v, want once", got)
	}
}

func TestTimerHeapStaysBounded(t *testing.T) {
	f := newFixture(t, fullRange)
	tm := f.b.Timers()
	f.set(1)
	tm.Register(1)
	for i := range 10_000 {
		tm.Register(int64(1000 + i))
		tm.Delete(int64(1000 + i))
	}
	if len(tm.heap) > 2*tm.Len()+65 {
		t.Fatalf("heap holds %d entries for %d timers", len(tm.heap), tm.Len())
	}
}

func TestTimersSnapshotRestore(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	a := applier{f, newModel()}
	for k := range 40 {
		a.timer(k, int64(100-k))
		a.timer(k, 1000)
	}
	s := f.b.Snapshot()
	// After the snapshot: fire some, register others; the snapshot keeps
	// the timers as they were.
	popAll(f, 80)
	a.timer(3, 1)
	src := writeSnapshot(t, s)
	s.Release()

	g := restored(t, fullRange, src)
	var want []fired
	for k := 39; k >= 0; k-- {
		want = append(want, fired{k, g.kg(k), int64(100 - k)})
	}
	got := popAll(g, 100)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored timers fired %v, want %v", got, want)
	}
	if n := len(popAll(g, 1000)); n != 40 {
		t.Fatalf("%d timers at 1000 fired, want 40", n)
	}
}

// sameGroupKeys returns n keys of one key group, and that group.
func sameGroupKeys(f *fixture, n int) ([]int, int) {
	by := map[int][]int{}
	for k := 0; ; k++ {
		kg := f.kg(k)
		by[kg] = append(by[kg], k)
		if len(by[kg]) == n {
			return by[kg], kg
		}
	}
}

// TestEventTimersAreASecondSet checks that the event-time timers are
// independent of the processing-time ones and fire in the same order:
// timestamp, key group, registration.
func TestEventTimersAreASecondSet(t *testing.T) {
	f := newFixture(t, fullRange)
	ev, pt := f.b.EventTimers(), f.b.Timers()
	if ev.Domain() != EventTime || pt.Domain() != ProcessingTime {
		t.Fatalf("domains %v and %v", pt.Domain(), ev.Domain())
	}
	f.set(1)
	pt.Register(10)
	ev.Register(10)
	ev.Register(20)
	f.set(2)
	ev.Register(5)
	ev.Register(5) // duplicate
	pt.Register(30)
	f.set(1)
	pt.Delete(10) // deletes only the processing-time one
	if pt.Len() != 1 || ev.Len() != 3 {
		t.Fatalf("Len = %d processing, %d event; want 1, 3", pt.Len(), ev.Len())
	}
	if ts, ok := ev.Next(); !ok || ts != 5 {
		t.Fatalf("event Next = %d, %v; want 5", ts, ok)
	}
	// A watermark of 10 fires the event timers up to 10 and no
	// processing-time timer.
	want := []fired{{2, f.kg(2), 5}, {1, f.kg(1), 10}}
	if got := popSet(f, ev, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("event timers fired %v, want %v", got, want)
	}
	if pt.Len() != 1 {
		t.Fatalf("processing-time timers: Len %d after event timers fired, want 1", pt.Len())
	}
	if got := popAll(f, 100); !reflect.DeepEqual(got, []fired{{2, f.kg(2), 30}}) {
		t.Fatalf("processing-time timers fired %v", got)
	}
	if got := popSet(f, ev, 100); !reflect.DeepEqual(got, []fired{{1, f.kg(1), 20}}) {
		t.Fatalf("event timers fired %v", got)
	}
}

// TestTimerRegistrationOrder checks the last tie-break, for both sets:
// equal timestamp and key group fire in registration order, also after
// delete churn compacted the queue; a timer deleted and registered again
// takes its new place.
func TestTimerRegistrationOrder(t *testing.T) {
	for _, d := range []TimeDomain{ProcessingTime, EventTime} {
		t.Run(d.String(), func(t *testing.T) {
			f := newFixture(t, fullRange)
			tm := f.b.Timers()
			if d == EventTime {
				tm = f.b.EventTimers()
			}
			keys, kg := sameGroupKeys(f, 6)
			order := []int{keys[3], keys[0], keys[5], keys[1], keys[4], keys[2]}
			for _, k := range order {
				f.set(k)
				tm.Register(50)
			}
			// keys[0] again: it moves to the end.
			f.set(keys[0])
			tm.Delete(50)
			tm.Register(50)
			order = append(slices.DeleteFunc(order, func(k int) bool { return k == keys[0] }), keys[0])
			// Churn that compacts the queue more than once.
			f.set(keys[1])
			for i := range 500 {
				tm.Register(int64(1000 + i))
				tm.Delete(int64(1000 + i))
			}
			var want []fired
			for _, k := range order {
				want = append(want, fired{k, kg, 50})
			}
			if got := popSet(f, tm, 50); !reflect.DeepEqual(got, want) {
				t.Fatalf("fired %v, want registration order %v", got, want)
			}
		})
	}
}

// TestRestoredTimerTiesAreDeterministic: a checkpoint holds no
// registration order, so restored ties fire by encoded key, whatever the
// order they were registered in.
func TestRestoredTimerTiesAreDeterministic(t *testing.T) {
	var first []fired
	for _, rev := range []bool{false, true} {
		f := newFixture(t, fullRange)
		keys, _ := sameGroupKeys(f, 8)
		if rev {
			slices.Reverse(keys)
		}
		for _, k := range keys {
			f.set(k)
			f.b.EventTimers().Register(7)
		}
		g := restored(t, fullRange, snapshotBytes(t, f.b))
		got := popSet(g, g.b.EventTimers(), 7)
		if len(got) != 8 {
			t.Fatalf("fired %d restored timers, want 8", len(got))
		}
		if first == nil {
			first = got
		} else if !reflect.DeepEqual(got, first) {
			t.Fatalf("restored ties fired %v after one registration order and %v after another", first, got)
		}
	}
	enc := func(k int) []byte { return binary.AppendVarint(mustCodec[int](t).Append(nil, k), 7) }
	if !slices.IsSortedFunc(first, func(a, b fired) int { return bytes.Compare(enc(a.Key), enc(b.Key)) }) {
		t.Fatalf("restored ties fired %v, not in encoded-key order", first)
	}
}

// TestRestoreSnapshotWithoutEventTimers restores a block as written
// before event-time timers existed (states and one timers section, built
// by hand here), and checks that today's writer gives the same bytes when
// the event-time set is empty, so old and new checkpoints are one format.
func TestRestoreSnapshotWithoutEventTimers(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	k := 3
	kg := f.kg(k)
	f.set(k)
	f.val.Update(42)
	f.b.Timers().Register(100)
	keyEnc := f.codes.key.Append(nil, k)

	valPayload := binary.AppendUvarint(nil, 1)
	valPayload = f.codes.i64.Append(append(valPayload, keyEnc...), 42)
	timerPayload := binary.AppendUvarint(nil, 1)
	timerPayload = binary.AppendVarint(append(timerPayload, keyEnc...), 100)
	blk := []byte{1} // block version
	blk = binary.AppendUvarint(blk, uint64(kg))
	blk = binary.AppendUvarint(blk, 2)
	blk = appendString(blk, "val")
	blk = append(blk, 1) // value state
	blk = binary.AppendUvarint(blk, uint64(len(valPayload)))
	blk = append(blk, valPayload...)
	blk = appendString(blk, "")
	blk = append(blk, 5) // timers, as before event time
	blk = binary.AppendUvarint(blk, uint64(len(timerPayload)))
	blk = append(blk, timerPayload...)
	old := BytesSource("old", blk, []checkpoint.KeyGroupOffset{{KeyGroup: kg, Offset: 0, Length: int64(len(blk))}})

	if now := snapshotBytes(t, f.b); !bytes.Equal(now.Data, blk) {
		t.Fatalf("snapshot without event timers:\n got %x\nwant %x (the format before event time)", now.Data, blk)
	}
	g := restored(t, fullRange, old)
	g.set(k)
	if v, ok := g.val.Value(); !ok || v != 42 {
		t.Fatalf("restored value %d, %v; want 42", v, ok)
	}
	if g.b.EventTimers().Len() != 0 {
		t.Fatalf("restored %d event-time timers from a checkpoint without any", g.b.EventTimers().Len())
	}
	if got := popAll(g, 100); !reflect.DeepEqual(got, []fired{{k, kg, 100}}) {
		t.Fatalf("restored processing-time timers fired %v", got)
	}
}

// TestTimersRescaleTwoToThree splits two subtasks' timers of both sets
// over three and checks each new subtask fires exactly its key groups'
// timers, each set in its order.
func TestTimersRescaleTwoToThree(t *testing.T) {
	var srcs []RestoreSource
	all := newModel()
	for i := range 2 {
		r := keygroup.RangeFor(testMaxP, 2, i)
		g := newFixture(t, r)
		g.register(t)
		a := applier{g, all}
		for k := range 200 {
			if r.Contains(g.kg(k)) {
				a.timer(k, int64(k%17))
				a.eventTimer(k, int64(100+k%13))
			}
		}
		srcs = append(srcs, snapshotBytes(t, g.b))
	}
	union := newModel()
	var firedPT, firedEv int
	for i := range 3 {
		r := keygroup.RangeFor(testMaxP, 3, i)
		g := restored(t, r, srcs...)
		got := g.dump(200)
		checkModel(t, fmt.Sprintf("subtask %d/3", i), got, all.restrict(g, r))
		mergeInto(union, got)
		for _, tm := range []*Timers[int]{g.b.Timers(), g.b.EventTimers()} {
			fs := popSet(g, tm, 1<<40)
			if !slices.IsSortedFunc(fs, func(a, b fired) int {
				return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.KG, b.KG))
			}) {
				t.Fatalf("subtask %d/3 %v fired out of order: %v", i, tm.Domain(), fs)
			}
			if tm.Domain() == EventTime {
				firedEv += len(fs)
			} else {
				firedPT += len(fs)
			}
		}
	}
	checkModel(t, "union of 3 subtasks", union, all)
	if firedPT != 200 || firedEv != 200 {
		t.Fatalf("fired %d processing-time and %d event-time timers, want 200 each", firedPT, firedEv)
	}
}

// TestTimerSectionsOrder: a block holds the states by name, then the
// processing-time timers, then the event-time timers, each once.
func TestTimerSectionsOrder(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	f.set(1)
	f.b.EventTimers().Register(3)
	f.b.Timers().Register(3)
	f.val.Update(1)
	src := snapshotBytes(t, f.b)
	type sec struct {
		Name string
		Kind Kind
	}
	var got []sec
	kgo := src.KeyGroups[0]
	if err := ParseBlock(kgo.KeyGroup, src.Data[kgo.Offset:kgo.Offset+kgo.Length], func(name string, k Kind, _ []byte) error {
		got = append(got, sec{name, k})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []sec{{"val", KindValue}, {"", KindTimers}, {"", KindEventTimers}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sections %v, want %v", got, want)
	}
}
