package lsm

import (
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

// largeBuffer holds every entry the tests below write: nothing is evicted,
// so only the write-backs before scans bring buffered writes to Pebble.
func largeBuffer(o *Options) { o.WriteBufferSize = 8 << 20 }

// TestWriteBufferSnapshotBarrier takes a full snapshot with every write
// still buffered (no Keys or eviction wrote it back) and changes every
// state after it: the snapshot must hold exactly the writes before it, as
// the heap backend's does.
func TestWriteBufferSnapshotBarrier(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	heap, lsm := newHeap(t, fullRange), newLSM(t, fullRange, largeBuffer)
	heap.register(t)
	lsm.register(t)
	for step := range 400 {
		k, op, x := rng.IntN(40), rng.IntN(14), rng.Int64N(100) // no timers
		apply(heap, op, k, x, step)
		apply(lsm, op, k, x, step)
	}
	b := lsm.b.(*Backend[int])
	if b.buf.size == 0 || len(b.buf.index) == 0 {
		t.Fatal("nothing buffered: the test proves nothing")
	}
	hs, ls := heap.b.Snapshot(), lsm.b.Snapshot()
	for i := range 100 {
		k, op := rng.IntN(40), rng.IntN(14)
		apply(heap, op, k, int64(i), 1000+i)
		apply(lsm, op, k, int64(i), 1000+i)
	}
	hb, lb := writeSnapshot(t, hs), writeSnapshot(t, ls)
	hs.Release()
	ls.Release()
	if !sameSource(hb, lb) {
		t.Fatal("a snapshot taken with buffered writes differs from the heap backend's")
	}
	if err := lsm.b.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestWriteBufferIncrementalBarrier is the same for an incremental
// checkpoint: restored, it holds the writes before it and none after.
func TestWriteBufferIncrementalBarrier(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	heap, lsm := newHeap(t, fullRange), newLSM(t, fullRange, largeBuffer)
	heap.register(t)
	lsm.register(t)
	for step := range 400 {
		k, op, x := rng.IntN(40), rng.IntN(14), rng.Int64N(100)
		apply(heap, op, k, x, step)
		apply(lsm, op, k, x, step)
	}
	want := heap.dump(modelKeys(40))
	fs := newStorage(t)
	h := incCheckpoint(t, lsm, fs, checkpoint.ID(1))
	for i := range 100 {
		apply(lsm, rng.IntN(14), rng.IntN(40), int64(i), 1000+i)
	}
	got, _ := restoreInc(t, fullRange, fs, true, []func(*Options){largeBuffer}, h)
	if d := got.dump(modelKeys(40)); !reflect.DeepEqual(d, want) {
		t.Fatalf("restored incremental checkpoint:\n got %v\nwant %v", d, want)
	}
}

// TestWriteBufferBound writes far more than the buffer holds, with values
// of growing size, and requires the accounted size to stay within the
// capacity after every write, every value to read back (from the buffer
// or the store), and values above an eighth of the capacity to be written
// through.
func TestWriteBufferBound(t *testing.T) {
	const capacity = 4096
	f := newLSM(t, fullRange, func(o *Options) { o.WriteBufferSize = capacity })
	f.register(t)
	b := f.b.(*Backend[int])
	for k := range 500 {
		f.set(k)
		f.list.Update(make([]string, k%40)) // 0 to 39 frames: some too large for the buffer
		f.val.Update(int64(k))
		if b.buf.size > capacity {
			t.Fatalf("key %d: %d bytes buffered, capacity %d", k, b.buf.size, capacity)
		}
		var n int64
		for _, s := range b.buf.slots {
			if s.used {
				n += slotCost(s.key, s.val)
				if slotCost(s.key, s.val) > capacity/8 {
					t.Fatalf("key %d: an entry of %d bytes is buffered", k, slotCost(s.key, s.val))
				}
			}
		}
		if n != b.buf.size {
			t.Fatalf("key %d: slots hold %d bytes, accounted %d", k, n, b.buf.size)
		}
	}
	for k := range 500 {
		f.set(k)
		if v, ok := f.val.Value(); !ok || v != int64(k) {
			t.Fatalf("key %d: value %d, %v", k, v, ok)
		}
		if l := f.list.Get(); len(l) != k%40 {
			t.Fatalf("key %d: list of %d, want %d", k, len(l), k%40)
		}
	}
	if err := f.b.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotOfFailedStoreFails: a snapshot taken after a store access
// failed (a write-back among them) may lack writes before its barrier, so
// writing it must fail rather than produce a checkpoint.
func TestSnapshotOfFailedStoreFails(t *testing.T) {
	f := newLSM(t, fullRange)
	f.register(t)
	f.set(1)
	f.val.Update(1)
	f.b.(*Backend[int]).fail(errors.New("injected write-back failure"))
	s := f.b.Snapshot()
	defer s.Release()
	if _, err := s.WriteBlocks(io.Discard); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("WriteBlocks = %v, want the store's failure", err)
	}
}
