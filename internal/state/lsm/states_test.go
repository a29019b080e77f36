package lsm

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

func TestValueState(t *testing.T) {
	f := newLSM(t, fullRange)
	f.register(t)
	f.set(1)
	if _, ok := f.val.Value(); ok {
		t.Fatal("value before any update")
	}
	f.val.Update(7)
	f.set(2)
	f.val.Update(-9)
	f.set(1)
	if v, ok := f.val.Value(); !ok || v != 7 {
		t.Fatalf("key 1 = %d, %v; want 7", v, ok)
	}
	f.val.Clear()
	if _, ok := f.val.Value(); ok {
		t.Fatal("value after Clear")
	}
	f.set(2)
	if v, _ := f.val.Value(); v != -9 {
		t.Fatalf("key 2 = %d, want -9 (Clear of key 1 touched it)", v)
	}
}

func TestReducingState(t *testing.T) {
	f := newLSM(t, fullRange)
	f.register(t)
	f.set(3)
	for _, v := range []int64{1, 2, 3} {
		f.sum.Add(v)
	}
	if v, ok := f.sum.Get(); !ok || v != 6 {
		t.Fatalf("sum = %d, %v; want 6", v, ok)
	}
	f.sum.Clear()
	if _, ok := f.sum.Get(); ok {
		t.Fatal("sum after Clear")
	}
}

func TestListState(t *testing.T) {
	f := newLSM(t, fullRange)
	f.register(t)
	f.set(4)
	if l := f.list.Get(); l != nil {
		t.Fatalf("empty list = %q", l)
	}
	f.list.Add("a")
	f.list.AddAll([]string{"", "c"})
	f.list.AddAll(nil)
	got := f.list.Get()
	if !slices.Equal(got, []string{"a", "", "c"}) {
		t.Fatalf("list = %q", got)
	}
	got[0] = "changed" // the caller owns the result
	f.list.Add("d")
	if l := f.list.Get(); !slices.Equal(l, []string{"a", "", "c", "d"}) {
		t.Fatalf("list = %q after a caller changed a returned slice", l)
	}
	f.list.Update([]string{"x"})
	if l := f.list.Get(); !slices.Equal(l, []string{"x"}) {
		t.Fatalf("list after Update = %q", l)
	}
	f.list.Add("y") // a merge on top of a set value
	if l := f.list.Get(); !slices.Equal(l, []string{"x", "y"}) {
		t.Fatalf("list = %q", l)
	}
	f.list.Update(nil)
	if l := f.list.Get(); l != nil {
		t.Fatalf("list after Update(nil) = %q", l)
	}
	f.list.Add("z") // a merge on top of a delete
	f.list.Clear()
	f.list.Add("w")
	if l := f.list.Get(); !slices.Equal(l, []string{"w"}) {
		t.Fatalf("list = %q", l)
	}
}

func TestMapState(t *testing.T) {
	f := newLSM(t, fullRange)
	f.register(t)
	f.set(5)
	for i, k := range []string{"b", "a", "cc", ""} {
		f.mp.Put(k, i)
	}
	f.mp.Put("b", 10)
	f.set(6)
	f.mp.Put("a", 99) // another key's entry with the same user key
	f.set(5)
	if v, ok := f.mp.Get("b"); !ok || v != 10 {
		t.Fatalf("Get(b) = %d, %v", v, ok)
	}
	if !f.mp.Contains("") || f.mp.Contains("zz") {
		t.Fatal("Contains")
	}
	if n := f.mp.Len(); n != 4 {
		t.Fatalf("Len = %d, want 4", n)
	}
	// All yields in encoded user-key order, and allows writes meanwhile.
	var order []string
	for k, v := range f.mp.All() {
		order = append(order, k)
		f.mp.Put(k+"!", v) // not yielded: the iteration sees its start
		f.mp.Remove("cc")
	}
	if !slices.Equal(order, []string{"", "a", "b", "cc"}) {
		t.Fatalf("All order = %q", order)
	}
	want := map[string]int{"": 3, "a": 1, "b": 10, "!": 3, "a!": 1, "b!": 10, "cc!": 2}
	if got := maps.Collect(f.mp.All()); !maps.Equal(got, want) {
		t.Fatalf("after writes during All: %v, want %v", got, want)
	}
	for range f.mp.All() {
		break // early exit closes the iterator (Close checks for leaks)
	}
	for range f.b.Keys("map") {
		break
	}
	f.mp.Clear()
	if n := f.mp.Len(); n != 0 {
		t.Fatalf("Len after Clear = %d", n)
	}
	f.set(6)
	if v, ok := f.mp.Get("a"); !ok || v != 99 {
		t.Fatalf("key 6 lost its entry to key 5's Clear: %d, %v", v, ok)
	}
}

func TestRegisterSameAndMismatch(t *testing.T) {
	f := newLSM(t, fullRange)
	f.register(t)
	again, err := state.RegisterValue(f.b, "val", mustCodec[int64](t))
	if err != nil || again != f.val {
		t.Fatalf("second registration: %v, same state %v", err, again == f.val)
	}
	if _, err := state.RegisterValue(f.b, "val", mustCodec[string](t)); !errors.Is(err, state.ErrStateMismatch) {
		t.Fatalf("value state under another type: %v", err)
	}
	if _, err := state.RegisterList(f.b, "val", mustCodec[int64](t)); !errors.Is(err, state.ErrStateMismatch) {
		t.Fatalf("list under a value state's name: %v", err)
	}
	if _, err := state.RegisterValue(f.b, "", mustCodec[int64](t)); err == nil {
		t.Fatal("empty name accepted")
	}
}

func TestRestoreBeforeAndAfterRegistration(t *testing.T) {
	src := newHeap(t, fullRange)
	src.register(t)
	for k := range 40 {
		src.set(k)
		src.val.Update(int64(k))
		src.mp.Put("x", k)
		src.b.Timers().Register(int64(k))
	}
	snap := snapshotBytes(t, src.b)

	// Registered before the restore: loaded at once.
	early := newLSM(t, fullRange)
	early.register(t)
	if err := early.b.Restore(t.Context(), []state.RestoreSource{snap}); err != nil {
		t.Fatal(err)
	}
	// Never registered: carried into the next snapshot unchanged.
	lazy := newLSM(t, fullRange)
	if err := lazy.b.Restore(t.Context(), []state.RestoreSource{snap}); err != nil {
		t.Fatal(err)
	}
	// Only states with entries are in the checkpoint.
	if u := lazy.b.UnrestoredStates(); !slices.Equal(u, []string{"map", "val"}) {
		t.Fatalf("UnrestoredStates = %q", u)
	}
	if got := snapshotBytes(t, lazy.b); !sameSource(got, snap) {
		t.Fatal("unregistered states were not carried over byte for byte")
	}
	for _, f := range []*fixture{early, restore(t, newLSM, fullRange, snap)} {
		if got := snapshotBytes(t, f.b); !sameSource(got, snap) {
			t.Fatal("restored store snapshots to other bytes")
		}
		if n := f.b.Timers().Len(); n != 40 {
			t.Fatalf("%d timers restored, want 40", n)
		}
	}
}

func TestRestoreKindMismatch(t *testing.T) {
	src := newHeap(t, fullRange)
	src.register(t)
	src.set(1)
	src.val.Update(1)
	snap := snapshotBytes(t, src.b)
	f := newLSM(t, fullRange)
	if err := f.b.Restore(t.Context(), []state.RestoreSource{snap}); err != nil {
		t.Fatal(err)
	}
	if _, err := state.RegisterList(f.b, "val", mustCodec[int64](t)); !errors.Is(err, state.ErrStateMismatch) {
		t.Fatalf("restored value state registered as a list: %v", err)
	}
	g := newLSM(t, fullRange)
	if _, err := state.RegisterList(g.b, "val", mustCodec[int64](t)); err != nil {
		t.Fatal(err)
	}
	if err := g.b.Restore(t.Context(), []state.RestoreSource{snap}); !errors.Is(err, state.ErrStateMismatch) {
		t.Fatalf("restore of a value state into a registered list: %v", err)
	}
}

// TestCorruptRestoreNeverPanics flips every byte of a snapshot in turn:
// the restore either fails with an error wrapping codec.ErrCorrupt or
// loads something; it never panics.
func TestCorruptRestoreNeverPanics(t *testing.T) {
	src := newHeap(t, fullRange)
	src.register(t)
	for k := range 3 {
		src.set(k)
		src.val.Update(int64(k))
		src.list.Add("e")
		src.mp.Put("k", k)
	}
	snap := snapshotBytes(t, src.b)
	for i := range snap.Data {
		data := slices.Clone(snap.Data)
		data[i] ^= 0x5a
		f := newLSM(t, fullRange)
		err := f.b.Restore(t.Context(), []state.RestoreSource{{Data: data, KeyGroups: snap.KeyGroups}})
		if err == nil {
			err = registerErr(t, f)
		}
		if err != nil && !errors.Is(err, codec.ErrCorrupt) && !errors.Is(err, state.ErrStateMismatch) {
			t.Fatalf("byte %d: %v", i, err)
		}
	}
}

func registerErr(t *testing.T, f *fixture) error {
	if _, err := state.RegisterValue(f.b, "val", mustCodec[int64](t)); err != nil {
		return err
	}
	if _, err := state.RegisterList(f.b, "list", mustCodec[string](t)); err != nil {
		return err
	}
	_, err := state.RegisterMap(f.b, "map", mustCodec[string](t), mustCodec[int](t))
	return err
}

// TestFlushedStateReadsAndSnapshots writes enough to flush several
// memtables of the smallest size, so that reads, list merges and snapshots
// go through SSTs, not only the memtable.
func TestFlushedStateReadsAndSnapshots(t *testing.T) {
	heap, lsm := newHeap(t, fullRange), newLSM(t, fullRange)
	heap.register(t)
	lsm.register(t)
	big := strings.Repeat("v", 1000)
	const keys = 3000
	for round := range 3 {
		for k := range keys {
			for _, f := range []*fixture{heap, lsm} {
				f.set(k)
				f.val.Update(int64(k * round))
				f.list.Add(big[:k%1000])
				f.mp.Put(big[:round], k)
			}
		}
	}
	db := lsm.b.(*Backend[int]).db
	if m := db.Metrics(); m.Flush.Count == 0 {
		t.Fatalf("no memtable was flushed; write more (metrics: %s)", m)
	}
	for _, k := range []int{0, 1, keys / 2, keys - 1} {
		if h, l := heap.read(k), lsm.read(k); !slices.Equal(h.List, l.List) || h.Val != l.Val || !maps.Equal(h.Map, l.Map) {
			t.Fatalf("key %d differs after flushes", k)
		}
	}
	if !sameSource(snapshotBytes(t, heap.b), snapshotBytes(t, lsm.b)) {
		t.Fatal("snapshots differ after flushes")
	}
}

func TestCloseRemovesStore(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(mustCodec[int](t), fullRange, testMaxP, Options{Dir: dir, Name: "op/1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(b.Dir()), "weir-lsm-op_1-") {
		t.Errorf("store folder %s does not name its operator", b.Dir())
	}
	snap := b.Snapshot()
	if err := b.Close(); err == nil {
		t.Error("Close with an unreleased snapshot did not complain")
	}
	snap.Release()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	c := mustCodec[int](t)
	if _, err := Open(c, keygroup.Range{Start: 0, End: 0}, testMaxP, Options{Dir: t.TempDir()}); err == nil {
		t.Error("empty range accepted")
	}
	if _, err := Open(c, fullRange, testMaxP, Options{Dir: t.TempDir(), MemtableSize: 1000}); err == nil || !strings.Contains(err.Error(), "memtable-size") {
		t.Errorf("tiny memtable: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(c, fullRange, testMaxP, Options{Dir: file}); err == nil || !strings.Contains(err.Error(), "state.backend.lsm.dir") {
		t.Errorf("a file as the folder: %v", err)
	}
}

// TestStorageErrorIsKept checks that a failed store access is reported by
// Err (the operator checks it per batch) instead of being lost.
func TestStorageErrorIsKept(t *testing.T) {
	f := newLSM(t, fullRange)
	f.register(t)
	f.set(1)
	f.val.Update(1)
	b := f.b.(*Backend[int])
	b.dropBuffer() // the next read goes to the store
	// A value that does not decode as int64: a corrupt store.
	if err := b.db.Set(b.keyOf(b.states["val"].sid), []byte{0xff}, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.val.Value(); ok {
		t.Fatal("a corrupt value was returned")
	}
	if err := f.b.Err(); !errors.Is(err, codec.ErrCorrupt) || !strings.Contains(err.Error(), `"val"`) {
		t.Fatalf("Err = %v, want a corruption error naming the state", err)
	}
}
