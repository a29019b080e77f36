package lsm

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

const testMaxP = 16

var fullRange = keygroup.Range{Start: 0, End: testMaxP}

// fixture is a backend (heap or lsm) over int keys with one state of every
// kind, used the way the keyed operator uses it: through state.Backend.
type fixture struct {
	name string
	b    state.Backend[int]
	val  state.ValueState[int64]
	list state.ListState[string]
	mp   state.MapState[string, int]
	sum  state.ReducingState[int64]
	hash func(int) uint32
}

func mustCodec[T any](t testing.TB) codec.Codec[T] {
	t.Helper()
	c, err := codec.For[T]()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func hasher(t testing.TB) func(int) uint32 {
	h, err := keygroup.Hasher[int]()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func newHeap(t testing.TB, kgs keygroup.Range) *fixture {
	t.Helper()
	return &fixture{name: "heap", b: state.NewKeyedBackend(mustCodec[int](t), kgs, testMaxP), hash: hasher(t)}
}

// tinyWriteBuffer is the write buffer of test stores: a dozen entries,
// so that tests evict (write back) all the time, and the largest values
// (long lists) are written through.
const tinyWriteBuffer = 2048

// newLSM opens a store in the test's temporary folder, closed (and
// checked to leave nothing behind) at cleanup.
func newLSM(t testing.TB, kgs keygroup.Range, opts ...func(*Options)) *fixture {
	t.Helper()
	o := Options{Dir: t.TempDir(), Name: t.Name(), MemtableSize: 1 << 20, BlockCacheSize: 1 << 20, WriteBufferSize: tinyWriteBuffer}
	for _, f := range opts {
		f(&o)
	}
	b, err := Open(mustCodec[int](t), kgs, testMaxP, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return &fixture{name: "lsm", b: b, hash: hasher(t)}
}

// register registers every state; restored bytes are loaded here.
func (f *fixture) register(t testing.TB) {
	t.Helper()
	var err error
	if f.val, err = state.RegisterValue(f.b, "val", mustCodec[int64](t)); err != nil {
		t.Fatal(err)
	}
	if f.list, err = state.RegisterList(f.b, "list", mustCodec[string](t)); err != nil {
		t.Fatal(err)
	}
	if f.mp, err = state.RegisterMap(f.b, "map", mustCodec[string](t), mustCodec[int](t)); err != nil {
		t.Fatal(err)
	}
	if f.sum, err = state.RegisterReducing(f.b, "sum", func(a, b int64) int64 { return a + b }, mustCodec[int64](t)); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) kg(k int) int { return keygroup.Of(f.hash(k), testMaxP) }

func (f *fixture) set(k int) { f.b.SetCurrentKey(k, f.kg(k)) }

// view is what a backend holds for one key, read through the state API.
type view struct {
	Val    int64
	HasVal bool
	List   []string
	Map    map[string]int
	MapLen int
	Sum    int64
	HasSum bool
}

func (f *fixture) read(k int) view {
	f.set(k)
	var v view
	v.Val, v.HasVal = f.val.Value()
	v.List = f.list.Get()
	v.Map = maps.Collect(f.mp.All())
	if len(v.Map) == 0 {
		v.Map = nil
	}
	v.MapLen = f.mp.Len()
	v.Sum, v.HasSum = f.sum.Get()
	return v
}

// lookup reads key k's value, sum and the map entry of user key x (as
// apply names them), without iterating the map.
func (f *fixture) lookup(k int, x int64) string {
	f.set(k)
	val, hv := f.val.Value()
	sum, hs := f.sum.Get()
	uk := fmt.Sprint(x % 7 * 1111 % 2000)
	if x%5 == 0 {
		uk = strings.Repeat("l", 250+int(x%10))
	}
	m, hm := f.mp.Get(uk)
	return fmt.Sprint(val, hv, sum, hs, m, hm)
}

// dump reads the given keys that lie in f's range.
func (f *fixture) dump(keys []int) map[int]view {
	out := map[int]view{}
	for _, k := range keys {
		if f.b.KeyGroups().Contains(f.kg(k)) {
			out[k] = f.read(k)
		}
	}
	return out
}

// snapshotBytes takes a snapshot and writes it at once.
func snapshotBytes(t testing.TB, b state.Backend[int]) state.RestoreSource {
	t.Helper()
	s := b.Snapshot()
	defer s.Release()
	return writeSnapshot(t, s)
}

func writeSnapshot(t testing.TB, s state.KeyedSnapshot) state.RestoreSource {
	t.Helper()
	var buf bytes.Buffer
	offs, err := s.WriteBlocks(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// Streamed, as a restore from checkpoint storage reads it; Data is
	// kept for tests that look at or damage the bytes (the stream reads
	// the same array).
	src := state.BytesSource("snapshot", buf.Bytes(), offs)
	src.Data = buf.Bytes()
	return src
}

// restore makes a fresh fixture of the given kind over kgs from srcs.
func restore(t testing.TB, mk func(testing.TB, keygroup.Range, ...func(*Options)) *fixture, kgs keygroup.Range, srcs ...state.RestoreSource) *fixture {
	t.Helper()
	f := mk(t, kgs)
	if err := f.b.Restore(t.Context(), srcs); err != nil {
		t.Fatal(err)
	}
	f.register(t)
	if u := f.b.UnrestoredStates(); len(u) != 0 {
		t.Fatalf("unrestored states %v", u)
	}
	return f
}

func heapMaker(t testing.TB, kgs keygroup.Range, _ ...func(*Options)) *fixture {
	return newHeap(t, kgs)
}

// firedTimers pops every processing-time timer due at now, as (key, ts)
// pairs in order.
func firedTimers(f *fixture, now int64) [][2]int64 { return firedSet(f, f.b.Timers(), now) }

// firedEvents pops every event-time timer due at watermark now.
func firedEvents(f *fixture, now int64) [][2]int64 { return firedSet(f, f.b.EventTimers(), now) }

func firedSet(f *fixture, tm *state.Timers[int], now int64) [][2]int64 {
	var out [][2]int64
	tm.PopDue(now, func(k int, _ int, ts int64) {
		if f.b.CurrentKey() != k {
			panic("PopDue did not set the current key")
		}
		out = append(out, [2]int64{int64(k), ts})
	})
	return out
}

func sameSource(a, b state.RestoreSource) bool {
	return bytes.Equal(a.Data, b.Data) && slices.Equal(a.KeyGroups, b.KeyGroups)
}
