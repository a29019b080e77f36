package state

import (
	"reflect"
	"testing"
)

type fired struct {
	Key int
	KG  int
	TS  int64
}

func popAll(f *fixture, now int64) []fired {
	var out []fired
	f.b.Timers().PopDue(now, func(k, kg int, ts int64) {
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
