package state

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/weirstream/weir/internal/keygroup"
)

var fullRange = keygroup.Range{Start: 0, End: testMaxP}

// populate gives keys 0..n-1 some state of every kind (not every key has
// every kind, so empty and missing states are covered too).
func populate(a applier, n int) {
	for k := range n {
		if k%5 != 0 {
			a.update(k, int64(k*10-7))
		}
		if k%3 != 0 {
			a.add(k, fmt.Sprint("a", k))
			a.addAll(k, "b", fmt.Sprint("c", k))
		}
		if k%4 != 1 {
			a.put(k, "x", k)
			a.put(k, fmt.Sprint("y", k%7), -k)
		}
		if k%2 == 0 {
			a.reduce(k, int64(k))
			a.reduce(k, 1)
		}
		if k%6 == 0 {
			a.timer(k, int64(1000+k))
			a.timer(k, 5000)
		}
		// Event-time timers: some keys have only them, some both sets
		// at equal timestamps, which must stay apart.
		if k%4 == 0 || k%6 == 3 {
			a.eventTimer(k, int64(2000+k))
			a.eventTimer(k, 5000)
		}
	}
}

func checkModel(t *testing.T, what string, got, want *model) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestRoundTripEveryKind(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	m := newModel()
	populate(applier{f, m}, 200)
	checkModel(t, "live backend", f.dump(250), m)
	if got := f.b.NumKeys(); got != 160 { // the value state has the most keys: 200 - 200/5
		t.Fatalf("NumKeys = %d, want 160", got)
	}

	src := snapshotBytes(t, f.b)
	if len(src.KeyGroups) != testMaxP {
		t.Fatalf("snapshot has %d key-group blocks, want %d", len(src.KeyGroups), testMaxP)
	}
	var next int64
	for i, kgo := range src.KeyGroups {
		if kgo.KeyGroup != i || kgo.Offset != next || kgo.Length <= 0 {
			t.Fatalf("block %d: %+v, want key group %d at offset %d", i, kgo, i, next)
		}
		next += kgo.Length
	}
	if next != int64(len(src.Data)) {
		t.Fatalf("blocks cover %d bytes of %d", next, len(src.Data))
	}
	g := restored(t, fullRange, src)
	checkModel(t, "restored backend", g.dump(250), m)
	if g.b.Timers().Len() != f.b.Timers().Len() || g.b.EventTimers().Len() != f.b.EventTimers().Len() {
		t.Fatalf("restored %d and %d event-time timers, want %d and %d", g.b.Timers().Len(), g.b.EventTimers().Len(), f.b.Timers().Len(), f.b.EventTimers().Len())
	}
}

func TestEmptyKeyGroupsAreNotWritten(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	a := applier{f, newModel()}
	a.update(1, 1)
	src := snapshotBytes(t, f.b)
	if len(src.KeyGroups) != 1 || src.KeyGroups[0].KeyGroup != f.kg(1) {
		t.Fatalf("blocks %+v, want one for key group %d", src.KeyGroups, f.kg(1))
	}
	a.clearVal(1)
	if src := snapshotBytes(t, f.b); len(src.KeyGroups) != 0 || len(src.Data) != 0 {
		t.Fatalf("empty backend wrote %+v", src)
	}
}

// mutateEverything changes every kind of state of keys 0..n-1 in every way.
func mutateEverything(a applier, n int) {
	for k := range n {
		switch k % 4 {
		case 0:
			a.update(k, -1)
			a.add(k, "new")
			a.put(k, "x", 999)
			a.put(k, "fresh", 1)
			a.reduce(k, 100)
			a.timer(k, 7)
			a.deleteTimer(k, 5000)
			a.eventTimer(k, 7)
		case 1:
			a.clearVal(k)
			a.setList(k, "replaced", "list")
			a.remove(k, "x")
			a.clearSum(k)
			a.timer(k, 5000)
		case 2:
			a.clearList(k)
			a.clearMap(k)
			a.addAll(k, "p", "q")
			a.deleteTimer(k, int64(1000+k))
			a.deleteEventTimer(k, 5000)
		case 3:
			a.setList(k)
			a.update(k, 3)
			a.put(k, "y0", 0)
		}
	}
	for k := n; k < n+20; k++ { // brand-new keys
		a.update(k, 42)
		a.add(k, "n")
		a.put(k, "n", 1)
		a.reduce(k, 2)
		a.timer(k, 9)
		a.eventTimer(k, 10)
	}
}

func TestCopyOnWriteEveryKind(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	m := newModel()
	a := applier{f, m}
	populate(a, 120)
	before := m.clone()

	s1 := f.b.Snapshot()
	mutateEverything(a, 120)
	between := m.clone()
	s2 := f.b.Snapshot() // a second live snapshot over already-cloned maps
	mutateEverything(a, 60)

	checkModel(t, "snapshot 1", restored(t, fullRange, writeSnapshot(t, s1)).dump(200), before)
	s1.Release()
	checkModel(t, "snapshot 2", restored(t, fullRange, writeSnapshot(t, s2)).dump(200), between)
	s2.Release()
	checkModel(t, "live backend", f.dump(200), m)

	// With no snapshot live, writes adopt maps in place; a new snapshot
	// must still be isolated from later writes.
	mutateEverything(a, 100)
	after := m.clone()
	s3 := f.b.Snapshot()
	mutateEverything(a, 120)
	checkModel(t, "snapshot 3", restored(t, fullRange, writeSnapshot(t, s3)).dump(200), after)
	s3.Release()
}

func TestListGetIsIsolated(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	f.set(1)
	f.list.AddAll([]string{"a", "b"})
	got := f.list.Get()
	_ = append(got, "caller's") // must not land in the state's spare capacity
	f.list.Add("c")
	if got := f.list.Get(); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("list = %q, want [a b c]", got)
	}
	in := []string{"x"}
	f.list.Update(in)
	in[0] = "changed by caller"
	if got := f.list.Get(); !reflect.DeepEqual(got, []string{"x"}) {
		t.Fatalf("list = %q after caller changed Update's argument, want [x]", got)
	}
}

// TestRandomOpsAgainstModel applies seeded random operations, takes
// snapshots at random points and writes them later (some overlapping), and
// checks every written snapshot equals the model as of its Snapshot call.
func TestRandomOpsAgainstModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			f := newFixture(t, fullRange)
			f.register(t)
			m := newModel()
			a := applier{f, m}
			type pending struct {
				s    KeyedSnapshot
				want *model
			}
			var open []pending
			for step := range 3000 {
				k := rng.IntN(60)
				switch rng.IntN(16) {
				case 0:
					a.update(k, rng.Int64N(1000))
				case 1:
					a.clearVal(k)
				case 2:
					a.add(k, fmt.Sprint(step))
				case 3:
					a.setList(k, fmt.Sprint(step), "z")
				case 4:
					a.clearList(k)
				case 5:
					a.put(k, fmt.Sprint(rng.IntN(5)), step)
				case 6:
					a.remove(k, fmt.Sprint(rng.IntN(5)))
				case 7:
					a.clearMap(k)
				case 8:
					a.reduce(k, rng.Int64N(10))
				case 9:
					a.clearSum(k)
				case 10:
					a.timer(k, rng.Int64N(50))
				case 11:
					a.deleteTimer(k, rng.Int64N(50))
				case 14:
					a.eventTimer(k, rng.Int64N(50))
				case 15:
					a.deleteEventTimer(k, rng.Int64N(50))
				case 12:
					if rng.IntN(20) == 0 {
						open = append(open, pending{f.b.Snapshot(), m.clone()})
					}
				case 13:
					if len(open) > 0 && rng.IntN(10) == 0 {
						i := rng.IntN(len(open))
						p := open[i]
						open = append(open[:i], open[i+1:]...)
						checkModel(t, fmt.Sprintf("step %d snapshot", step), restored(t, fullRange, writeSnapshot(t, p.s)).dump(60), p.want)
						p.s.Release()
					}
				}
			}
			for _, p := range open {
				checkModel(t, "final snapshot", restored(t, fullRange, writeSnapshot(t, p.s)).dump(60), p.want)
				p.s.Release()
			}
			checkModel(t, "live backend", f.dump(60), m)
		})
	}
}

// TestWriteBlocksConcurrentWithMutation runs WriteBlocks on another
// goroutine while the owner keeps mutating; run it with -race.
func TestWriteBlocksConcurrentWithMutation(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	m := newModel()
	a := applier{f, m}
	populate(a, 150)
	for round := range 4 {
		want := m.clone()
		s := f.b.Snapshot()
		type result struct {
			src RestoreSource
			err error
		}
		done := make(chan result)
		go func() {
			var buf bytesBuffer
			offs, err := s.WriteBlocks(&buf)
			s.Release()
			done <- result{RestoreSource{Data: buf.b, KeyGroups: offs}, err}
		}()
		mutateEverything(a, 150-round*20)
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		checkModel(t, fmt.Sprint("round ", round), restored(t, fullRange, r.src).dump(200), want)
	}
}

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

func TestSnapshotIsSingleUse(t *testing.T) {
	f := newFixture(t, fullRange)
	s := f.b.Snapshot()
	writeSnapshot(t, s)
	if _, err := s.WriteBlocks(&bytesBuffer{}); err == nil {
		t.Fatal("second WriteBlocks succeeded, want an error")
	}
	s.Release()
	s.Release() // idempotent
	if n := f.b.cow.live.Load(); n != 0 {
		t.Fatalf("live snapshots = %d after release, want 0", n)
	}
}

func TestRescaleSplitAndMerge(t *testing.T) {
	// One subtask owning everything, split over 2 and over 3 subtasks.
	f := newFixture(t, fullRange)
	f.register(t)
	m := newModel()
	populate(applier{f, m}, 200)
	src := snapshotBytes(t, f.b)
	for _, p := range []int{2, 3} {
		union := newModel()
		for i := range p {
			r := keygroup.RangeFor(testMaxP, p, i)
			g := restored(t, r, src)
			got := g.dump(250)
			checkModel(t, fmt.Sprintf("subtask %d/%d %s", i, p, r), got, m.restrict(f, r))
			mergeInto(union, got)
		}
		checkModel(t, fmt.Sprintf("union of %d subtasks", p), union, m)
	}

	// Three subtasks merged into two and into one.
	var srcs []RestoreSource
	all := newModel()
	for i := range 3 {
		r := keygroup.RangeFor(testMaxP, 3, i)
		g := newFixture(t, r)
		g.register(t)
		mi := newModel()
		a := applier{g, mi}
		for k := range 300 {
			if r.Contains(g.kg(k)) {
				a.update(k, int64(k))
				a.add(k, fmt.Sprint(i))
				a.put(k, "s", i)
				a.reduce(k, 3)
				a.timer(k, int64(k))
				a.eventTimer(k, int64(1000-k))
			}
		}
		mergeInto(all, mi)
		srcs = append(srcs, snapshotBytes(t, g.b))
	}
	checkModel(t, "merged into one", restored(t, fullRange, srcs...).dump(300), all)
	for i := range 2 {
		r := keygroup.RangeFor(testMaxP, 2, i)
		checkModel(t, fmt.Sprintf("merged into subtask %d/2", i), restored(t, r, srcs...).dump(300), all.restrict(f, r))
	}
}

func mergeInto(dst, src *model) {
	for k, v := range src.Val {
		dst.Val[k] = v
	}
	for k, v := range src.List {
		dst.List[k] = v
	}
	for k, v := range src.Map {
		dst.Map[k] = v
	}
	for k, v := range src.Sum {
		dst.Sum[k] = v
	}
	for k, v := range src.Timers {
		dst.Timers[k] = v
	}
	for k, v := range src.Events {
		dst.Events[k] = v
	}
}

func TestSetCurrentKeyOutsideRangePanics(t *testing.T) {
	f := newFixture(t, keygroup.RangeFor(testMaxP, 2, 1))
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("no panic for a key group outside the range")
		}
	}()
	f.b.SetCurrentKey(1, 0)
}
