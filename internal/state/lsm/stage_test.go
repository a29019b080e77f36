package lsm

import (
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/state"
)

// stagedKeys counts the stage keys in f's store.
func stagedKeys(t *testing.T, f *fixture) int {
	t.Helper()
	b := f.b.(*Backend[int])
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: []byte{stageTag}, UpperBound: []byte{stageTag + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	return n
}

// TestRestoreStagesUnregisteredStates: a restore before registration
// keeps the payloads in the store, one key per state and key group, not in
// Go memory; registering a state decodes them into its entries and drops
// them, so the store then holds exactly what a restore after
// registration gives.
func TestRestoreStagesUnregisteredStates(t *testing.T) {
	src := newHeap(t, fullRange)
	src.register(t)
	for k := range 200 {
		src.set(k)
		src.val.Update(int64(k))
		src.mp.Put("x", k)
	}
	snap := snapshotBytes(t, src.b)

	lazy := newLSM(t, fullRange)
	if err := lazy.b.Restore(t.Context(), []state.RestoreSource{snap}); err != nil {
		t.Fatal(err)
	}
	groups := 0
	if err := state.ForEachBlock(t.Context(), []state.RestoreSource{snap}, fullRange, func(kg int, blk []byte) error {
		return state.ParseBlock(kg, blk, func(name string, k state.Kind, _ []byte) error {
			if k != state.KindTimers {
				groups++
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if n := stagedKeys(t, lazy); n != groups || n == 0 {
		t.Fatalf("%d staged payloads, want one per state and key group: %d", n, groups)
	}
	lazy.register(t)
	if n := stagedKeys(t, lazy); n != 0 {
		t.Fatalf("%d staged payloads left after registration", n)
	}
	keys := make([]int, 200)
	for i := range keys {
		keys[i] = i
	}
	if want, got := src.dump(keys), lazy.dump(keys); !reflect.DeepEqual(got, want) {
		t.Fatalf("state after a staged restore differs from the source:\n got %v\nwant %v", got, want)
	}
	if got := snapshotBytes(t, lazy.b); !sameSource(got, snap) {
		t.Fatal("staged restore snapshots to other bytes")
	}
}
