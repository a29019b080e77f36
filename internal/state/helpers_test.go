package state

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
)

const testMaxP = 16

// fixture is a backend over int keys with one state of every kind.
type fixture struct {
	b     *KeyedBackend[int]
	val   ValueState[int64]
	list  ListState[string]
	mp    MapState[string, int]
	sum   ReducingState[int64]
	hash  func(int) uint32
	codes fixtureCodecs
}

type fixtureCodecs struct {
	key  codec.Codec[int]
	i64  codec.Codec[int64]
	str  codec.Codec[string]
	ival codec.Codec[int]
}

func mustCodec[T any](t testing.TB) codec.Codec[T] {
	t.Helper()
	c, err := codec.For[T]()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newFixture(t testing.TB, kgs keygroup.Range) *fixture {
	t.Helper()
	h, err := keygroup.Hasher[int]()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{hash: h, codes: fixtureCodecs{
		key: mustCodec[int](t), i64: mustCodec[int64](t), str: mustCodec[string](t), ival: mustCodec[int](t),
	}}
	f.b = NewKeyedBackend(f.codes.key, kgs, testMaxP)
	return f
}

// register registers every state; restored bytes are decoded here.
func (f *fixture) register(t testing.TB) {
	t.Helper()
	var err error
	if f.val, err = RegisterValue(f.b, "val", f.codes.i64); err != nil {
		t.Fatal(err)
	}
	if f.list, err = RegisterList(f.b, "list", f.codes.str); err != nil {
		t.Fatal(err)
	}
	if f.mp, err = RegisterMap(f.b, "map", f.codes.str, f.codes.ival); err != nil {
		t.Fatal(err)
	}
	if f.sum, err = RegisterReducing(f.b, "sum", func(a, b int64) int64 { return a + b }, f.codes.i64); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) kg(k int) int { return keygroup.Of(f.hash(k), testMaxP) }

func (f *fixture) set(k int) { f.b.SetCurrentKey(k, f.kg(k)) }

// model is a naive picture of every state, to compare backends against.
type model struct {
	Val    map[int]int64
	List   map[int][]string
	Map    map[int]map[string]int
	Sum    map[int]int64
	Timers map[int][]int64 // processing time: sorted timestamps per key
	Events map[int][]int64 // event time: sorted timestamps per key
}

func newModel() *model {
	return &model{Val: map[int]int64{}, List: map[int][]string{}, Map: map[int]map[string]int{}, Sum: map[int]int64{}, Timers: map[int][]int64{}, Events: map[int][]int64{}}
}

func (m *model) clone() *model {
	c := newModel()
	maps.Copy(c.Val, m.Val)
	maps.Copy(c.Sum, m.Sum)
	for k, v := range m.List {
		c.List[k] = slices.Clone(v)
	}
	for k, v := range m.Map {
		c.Map[k] = maps.Clone(v)
	}
	for k, v := range m.Timers {
		c.Timers[k] = slices.Clone(v)
	}
	for k, v := range m.Events {
		c.Events[k] = slices.Clone(v)
	}
	return c
}

// dump reads keys 0..universe-1 of f's range back into a model, without
// changing f.
func (f *fixture) dump(universe int) *model {
	m := newModel()
	for k := range universe {
		if !f.b.kgs.Contains(f.kg(k)) {
			continue
		}
		f.set(k)
		if v, ok := f.val.Value(); ok {
			m.Val[k] = v
		}
		if l := f.list.Get(); l != nil {
			m.List[k] = slices.Clone(l)
		}
		if f.mp.Len() > 0 {
			m.Map[k] = maps.Collect(f.mp.All())
		}
		if v, ok := f.sum.Get(); ok {
			m.Sum[k] = v
		}
	}
	dumpTimers(m.Timers, f.b.timers)
	dumpTimers(m.Events, f.b.events)
	return m
}

// dumpTimers reads a timer set's registered timers into m.
func dumpTimers[K comparable](m map[K][]int64, t *Timers[K]) {
	for i := range t.core.tab.groups {
		t.core.tab.groups[i].each(func(tk timerKey[K], _ uint64) bool {
			m[tk.key] = append(m[tk.key], tk.ts)
			return true
		})
	}
	for _, ts := range m {
		slices.Sort(ts)
	}
}

// restrict keeps the keys of m whose key group lies in r.
func (m *model) restrict(f *fixture, r keygroup.Range) *model {
	c := m.clone()
	for _, mm := range []any{c.Val, c.List, c.Map, c.Sum, c.Timers, c.Events} {
		switch mm := mm.(type) {
		case map[int]int64:
			maps.DeleteFunc(mm, func(k int, _ int64) bool { return !r.Contains(f.kg(k)) })
		case map[int][]string:
			maps.DeleteFunc(mm, func(k int, _ []string) bool { return !r.Contains(f.kg(k)) })
		case map[int]map[string]int:
			maps.DeleteFunc(mm, func(k int, _ map[string]int) bool { return !r.Contains(f.kg(k)) })
		case map[int][]int64:
			maps.DeleteFunc(mm, func(k int, _ []int64) bool { return !r.Contains(f.kg(k)) })
		}
	}
	return c
}

// snapshotBytes takes a snapshot and writes it at once.
func snapshotBytes(t testing.TB, b *KeyedBackend[int]) RestoreSource {
	t.Helper()
	s := b.Snapshot()
	defer s.Release()
	return writeSnapshot(t, s)
}

func writeSnapshot(t testing.TB, s KeyedSnapshot) RestoreSource {
	t.Helper()
	var buf bytes.Buffer
	offs, err := s.WriteBlocks(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// Streamed, as a restore from checkpoint storage reads it; Data is
	// kept for tests that look at or damage the bytes (the stream reads
	// the same array).
	src := BytesSource("snapshot", buf.Bytes(), offs)
	src.Data = buf.Bytes()
	return src
}

// restored returns a fresh fixture over kgs restored from srcs.
func restored(t testing.TB, kgs keygroup.Range, srcs ...RestoreSource) *fixture {
	t.Helper()
	f := newFixture(t, kgs)
	if err := f.b.Restore(t.Context(), srcs); err != nil {
		t.Fatal(err)
	}
	f.register(t)
	if u := f.b.UnrestoredStates(); len(u) != 0 {
		t.Fatalf("unrestored states %v", u)
	}
	return f
}

// applier changes a fixture and its model in step.
type applier struct {
	f *fixture
	m *model
}

func (a applier) update(k int, v int64) { a.f.set(k); a.f.val.Update(v); a.m.Val[k] = v }
func (a applier) clearVal(k int)        { a.f.set(k); a.f.val.Clear(); delete(a.m.Val, k) }
func (a applier) add(k int, s string) {
	a.f.set(k)
	a.f.list.Add(s)
	a.m.List[k] = append(a.m.List[k], s)
}
func (a applier) addAll(k int, s ...string) {
	a.f.set(k)
	a.f.list.AddAll(s)
	if len(s) > 0 {
		a.m.List[k] = append(a.m.List[k], s...)
	}
}
func (a applier) setList(k int, s ...string) {
	a.f.set(k)
	a.f.list.Update(s)
	if len(s) == 0 {
		delete(a.m.List, k)
	} else {
		a.m.List[k] = slices.Clone(s)
	}
}
func (a applier) clearList(k int) { a.f.set(k); a.f.list.Clear(); delete(a.m.List, k) }
func (a applier) put(k int, uk string, v int) {
	a.f.set(k)
	a.f.mp.Put(uk, v)
	if a.m.Map[k] == nil {
		a.m.Map[k] = map[string]int{}
	}
	a.m.Map[k][uk] = v
}
func (a applier) remove(k int, uk string) {
	a.f.set(k)
	a.f.mp.Remove(uk)
	delete(a.m.Map[k], uk)
	if len(a.m.Map[k]) == 0 {
		delete(a.m.Map, k)
	}
}
func (a applier) clearMap(k int)              { a.f.set(k); a.f.mp.Clear(); delete(a.m.Map, k) }
func (a applier) reduce(k int, v int64)       { a.f.set(k); a.f.sum.Add(v); a.m.Sum[k] += v }
func (a applier) clearSum(k int)              { a.f.set(k); a.f.sum.Clear(); delete(a.m.Sum, k) }
func (a applier) timer(k int, ts int64)       { registerTimer(a.f, a.f.b.Timers(), a.m.Timers, k, ts) }
func (a applier) deleteTimer(k int, ts int64) { deleteTimer(a.f, a.f.b.Timers(), a.m.Timers, k, ts) }
func (a applier) eventTimer(k int, ts int64) {
	registerTimer(a.f, a.f.b.EventTimers(), a.m.Events, k, ts)
}
func (a applier) deleteEventTimer(k int, ts int64) {
	deleteTimer(a.f, a.f.b.EventTimers(), a.m.Events, k, ts)
}

func registerTimer(f *fixture, t *Timers[int], m map[int][]int64, k int, ts int64) {
	f.set(k)
	t.Register(ts)
	if !slices.Contains(m[k], ts) {
		m[k] = append(m[k], ts)
		slices.Sort(m[k])
	}
}

func deleteTimer(f *fixture, t *Timers[int], m map[int][]int64, k int, ts int64) {
	f.set(k)
	t.Delete(ts)
	m[k] = slices.DeleteFunc(m[k], func(x int64) bool { return x == ts })
	if len(m[k]) == 0 {
		delete(m, k)
	}
}
