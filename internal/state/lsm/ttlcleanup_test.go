package lsm

import (
	"reflect"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// storeKeys counts the store keys of the registered states' ids, after
// writing back the write buffer.
func storeKeys(t *testing.T, b *Backend[int]) int {
	t.Helper()
	b.flushBuffer()
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: appendGroupPrefix(nil, b.kgs.Start), UpperBound: appendGroupPrefix(nil, b.kgs.End)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		n++
	}
	return n
}

// TestTTLSweepRemovesUnreadExpiredState: keys never read again lose their
// expired state to the incremental sweep, in bounded steps; a list keeps
// its live elements.
func TestTTLSweepRemovesUnreadExpiredState(t *testing.T) {
	f := newTTLFixture(t, ttlMaker{"lsm", newLSM}, ttlConfig100ms)
	b := f.b.(*Backend[int])
	for k := range 200 {
		f.set(k)
		f.val.Update(1)
		f.list.Add("old")
		f.mp.Put("a", 1)
		f.mp.Put("b", 2)
		f.sum.Add(1)
	}
	f.now = 50
	f.set(0)
	f.list.Add("live")
	before := storeKeys(t, b)
	if before != 200*5 {
		t.Fatalf("%d store keys, want 1000", before)
	}
	f.now = 120 // everything but key 0's second list element expired
	steps := 0
	for wrapped := false; !wrapped; steps++ {
		var err error
		if wrapped, err = b.sweepTTL(ttlCleanupKeys); err != nil {
			t.Fatal(err)
		}
	}
	if want := (before + ttlCleanupKeys - 1) / ttlCleanupKeys; steps < want {
		t.Fatalf("swept %d keys in %d steps of %d", before, steps, ttlCleanupKeys)
	}
	if n := storeKeys(t, b); n != 1 {
		t.Fatalf("%d store keys left after a sweep, want 1 (key 0's list)", n)
	}
	f.now = 0 // the clock turned back: what is left is what the store holds
	f.set(0)
	if got := f.list.Get(); !reflect.DeepEqual(got, []string{"live"}) {
		t.Fatalf("list after the sweep %v, want [live]", got)
	}
}

// TestTTLSweepRunsFromRecords: the sweep is driven by SetCurrentKey, one
// step per ttlCleanupEvery records.
func TestTTLSweepRunsFromRecords(t *testing.T) {
	f := newTTLFixture(t, ttlMaker{"lsm", newLSM}, ttlConfig100ms)
	b := f.b.(*Backend[int])
	for k := range 100 {
		f.set(k)
		f.val.Update(1)
	}
	f.now = 1000
	for range ttlCleanupEvery - 100 - 1 {
		f.set(5000)
	}
	if n := storeKeys(t, b); n != 100 {
		t.Fatalf("%d store keys before the first step, want 100", n)
	}
	f.set(5000) // the step: the first ttlCleanupKeys keys
	if n := storeKeys(t, b); n != 100-ttlCleanupKeys {
		t.Fatalf("%d store keys after one step, want %d", n, 100-ttlCleanupKeys)
	}
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
}

var ttlConfig100ms = ttlConfigOf(100 * time.Millisecond)

// TestTTLSweepPassesLiveKeys: live state in front does not stop the sweep
// from reaching expired state behind it.
func TestTTLSweepPassesLiveKeys(t *testing.T) {
	f := newTTLFixture(t, ttlMaker{"lsm", newLSM}, ttlConfig100ms)
	b := f.b.(*Backend[int])
	for k := range 400 {
		f.set(k)
		f.val.Update(1)
	}
	f.now = 90
	live := 0
	for k := range 400 {
		if f.kg(k) < testMaxP/2 { // the first half of the store, renewed
			f.set(k)
			f.val.Update(2)
			live++
		}
	}
	f.now = 120
	for steps := 0; ; steps++ {
		if steps > 100 {
			t.Fatal("the sweep did not wrap around in 100 steps")
		}
		wrapped, err := b.sweepTTL(ttlCleanupKeys)
		if err != nil {
			t.Fatal(err)
		}
		if wrapped {
			break
		}
	}
	if n := storeKeys(t, b); n != live {
		t.Fatalf("%d store keys after a sweep, want the %d live ones", n, live)
	}
}
