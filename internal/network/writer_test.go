package network

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/keygroup"
)

// consumers returns n single-channel gates and the writer channels over them.
func consumers(n, credits int) ([]*Gate, []*Channel) {
	gates := make([]*Gate, n)
	chans := make([]*Channel, n)
	for i := range gates {
		gates[i] = NewGate(1, credits)
		chans[i] = gates[i].Channel(0)
	}
	return gates, chans
}

func drainAll(gates []*Gate) string {
	var out []string
	for i, g := range gates {
		out = append(out, fmt.Sprintf("g%d{%s}", i, drain(g)))
	}
	return strings.Join(out, " ")
}

func TestWriterBatchesFlushesAndBroadcastsInOrder(t *testing.T) {
	ctx := context.Background()
	gates, chans := consumers(2, 8)
	w := NewWriter(chans, Forward[int](), NewPool[int](3), 1)
	for i := range 7 {
		if err := w.Emit(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := drainAll(gates), "g0{} g1{0:data[0 1 2] 0:data[3 4 5]}"; got != want {
		t.Fatalf("before flush got %s, want %s", got, want)
	}
	if err := w.Broadcast(ctx, barrier(3)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil { // nothing open: sends nothing
		t.Fatal(err)
	}
	if err := w.Broadcast(ctx, Buffer{Kind: EndOfPartition}); err != nil {
		t.Fatal(err)
	}
	if got, want := drainAll(gates), "g0{0:barrier3 0:eop} g1{0:data[6] 0:barrier3 0:eop}"; got != want {
		t.Fatalf("after broadcast got %s, want %s", got, want)
	}
	if err := w.Broadcast(ctx, dataBuf(NewPool[int](1), 1)); err == nil {
		t.Fatal("broadcast of a data buffer succeeded")
	}
}

func TestHashWriterRoutesByKeyGroup(t *testing.T) {
	ctx := context.Background()
	hash := func(k int) uint32 { return keygroup.Uint64(uint64(k)) }
	for _, tc := range []struct{ n, maxP int }{{1, 128}, {2, 128}, {3, 7}, {5, 5}, {7, 1000}} {
		t.Run(fmt.Sprintf("n=%d,maxP=%d", tc.n, tc.maxP), func(t *testing.T) {
			const keys = 3000
			gates, chans := consumers(tc.n, keys)
			w := NewWriter(chans, Hash(hash, tc.maxP), NewPool[int](16), 0)
			all := make([]int, keys)
			for k := range all {
				all[k] = k
			}
			if err := w.EmitBatch(ctx, all[:keys/2]); err != nil {
				t.Fatal(err)
			}
			for _, k := range all[keys/2:] {
				if err := w.Emit(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			seen := make([]int, keys)
			perChannel := make([]int, tc.n)
			for i, g := range gates {
				for _, b, ok := g.Poll(); ok; _, b, ok = g.Poll() {
					batch := b.Data.(*Batch[int])
					for _, k := range batch.Records {
						want := keygroup.OperatorIndex(keygroup.Of(hash(k), tc.maxP), tc.maxP, tc.n)
						if i != want {
							t.Fatalf("key %d went to channel %d, want %d", k, i, want)
						}
						seen[k]++
						perChannel[i]++
					}
					batch.Recycle()
				}
			}
			for k, c := range seen {
				if c != 1 {
					t.Fatalf("key %d delivered %d times", k, c)
				}
			}
			for i, c := range perChannel {
				if tc.n > 1 && c == 0 {
					t.Fatalf("channel %d got no keys: %v", i, perChannel)
				}
			}
		})
	}
}

func TestHashByKey(t *testing.T) {
	type rec struct {
		user string
		n    int
	}
	p, err := HashByKey(func(r rec) string { return r.user }, 128)
	if err != nil {
		t.Fatal(err)
	}
	gates, chans := consumers(4, 16)
	w := NewWriter(chans, p, NewPool[rec](1), 0)
	users := []string{"alice", "bob", "carol", "dave", "erin", ""}
	for _, u := range users {
		if err := w.Emit(context.Background(), rec{u, 1}); err != nil {
			t.Fatal(err)
		}
	}
	for i, g := range gates {
		for _, b, ok := g.Poll(); ok; _, b, ok = g.Poll() {
			r := b.Data.(*Batch[rec]).Records[0]
			if want := keygroup.OperatorIndex(keygroup.Of(keygroup.String(r.user), 128), 128, 4); want != i {
				t.Fatalf("user %q on channel %d, want %d", r.user, i, want)
			}
		}
	}
	if _, err := HashByKey(func(r rec) struct{ a int } { return struct{ a int }{r.n} }, 128); err == nil {
		t.Fatal("struct key without a stable hash accepted")
	}
}

// Rebalance sends chunks of the batch size to the channels in turn from
// the writer's own subtask; a flush sends a partial batch and keeps the
// channel until its chunk is full.
func TestRebalanceRotatesChunks(t *testing.T) {
	ctx := context.Background()
	gates, chans := consumers(3, 8)
	w := NewWriter(chans, Rebalance[int](), NewPool[int](2), 1)
	for i := range 11 {
		if err := w.Emit(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.EmitBatch(ctx, []int{11, 12, 13}); err != nil {
		t.Fatal(err)
	}
	want := "g0{0:data[4 5] 0:data[10] 0:data[11]} g1{0:data[0 1] 0:data[6 7] 0:data[12 13]} g2{0:data[2 3] 0:data[8 9]}"
	if got := drainAll(gates); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// A record's channel depends only on how many records the writer emitted
// before it, whatever was flushed when, and a writer placed with
// SetRebalancePosition continues where one that emitted that many left
// off: a restarted producer's records go where the failed attempt's went.
func TestRebalanceChannelByPosition(t *testing.T) {
	ctx := context.Background()
	const n, size, self = 3, 4, 2
	channelOf := func(w *Writer[int], gates []*Gate, from, to int, flushEvery int) map[int]int {
		t.Helper()
		for i := from; i < to; i++ {
			if err := w.Emit(ctx, i); err != nil {
				t.Fatal(err)
			}
			if flushEvery > 0 && i%flushEvery == 0 {
				if err := w.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		got := map[int]int{}
		for ch, g := range gates {
			for _, b, ok := g.Poll(); ok; _, b, ok = g.Poll() {
				for _, r := range b.Data.(*Batch[int]).Records {
					got[r] = ch
				}
			}
		}
		return got
	}
	gates, chans := consumers(n, 64)
	want := channelOf(NewWriter(chans, Rebalance[int](), NewPool[int](size), self), gates, 0, 50, 0)
	for _, flushEvery := range []int{1, 3, 5, 7} {
		gates, chans := consumers(n, 64)
		if got := channelOf(NewWriter(chans, Rebalance[int](), NewPool[int](size), self), gates, 0, 50, flushEvery); !maps.Equal(got, want) {
			t.Fatalf("flushing every %d records moved records to other channels:\ngot  %v\nwant %v", flushEvery, got, want)
		}
	}
	for _, at := range []int{0, 1, 4, 13, 30} {
		gates, chans := consumers(n, 64)
		w := NewWriter(chans, Rebalance[int](), NewPool[int](size), self)
		w.SetRebalancePosition(uint64(at))
		got := channelOf(w, gates, at, 50, 2)
		for i := at; i < 50; i++ {
			if got[i] != want[i] {
				t.Fatalf("placed at %d: record %d on channel %d, want %d", at, i, got[i], want[i])
			}
		}
	}
}

func TestBroadcastPartitionerCopiesToEveryChannel(t *testing.T) {
	ctx := context.Background()
	gates, chans := consumers(3, 8)
	w := NewWriter(chans, Broadcast[int](), NewPool[int](2), 0)
	if err := w.EmitBatch(ctx, []int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := "g0{0:data[1 2] 0:data[3]} g1{0:data[1 2] 0:data[3]} g2{0:data[1 2] 0:data[3]}"
	if got := drainAll(gates); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestCustomPartitionerOutOfRangeFails(t *testing.T) {
	ctx := context.Background()
	gates, chans := consumers(2, 8)
	w := NewWriter(chans, Custom(func(r, n int) int { return r % (n + 1) }), NewPool[int](1), 0)
	if err := w.EmitBatch(ctx, []int{0, 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Emit(ctx, 2); err == nil || !strings.Contains(err.Error(), "channel 2 of 2") {
		t.Fatalf("got %v, want an out-of-range error", err)
	}
	if got, want := drainAll(gates), "g0{0:data[0]} g1{0:data[1]}"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestWriterPanicsOnInconsistentConfiguration(t *testing.T) {
	_, chans := consumers(4, 1)
	hash := func(int) uint32 { return 0 }
	for name, f := range map[string]func(){
		"no channels":      func() { NewWriter([]*Channel(nil), Forward[int](), NewPool[int](1), 0) },
		"forward self":     func() { NewWriter(chans, Forward[int](), NewPool[int](1), 4) },
		"maxP below n":     func() { NewWriter(chans, Hash(hash, 3), NewPool[int](1), 0) },
		"hash without fn":  func() { NewWriter(chans, Hash[int](nil, 128), NewPool[int](1), 0) },
		"zero batch size":  func() { NewPool[int](0) },
		"zero credits":     func() { NewGate(1, 0) },
		"gate no channels": func() { NewGate(0, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestCancelledSendRecyclesTheBatch(t *testing.T) {
	gates, chans := consumers(1, 1)
	pool := NewPool[int](1)
	w := NewWriter(chans, Forward[int](), pool, 0)
	if err := w.Emit(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if err := w.Emit(cancelled(), 2); err == nil {
		t.Fatal("emit into a full channel with a cancelled context succeeded")
	}
	if got := drain(gates[0]); got != "0:data[1]" {
		t.Fatalf("got %s", got)
	}
	// Both batches are back in the pool: the next two Gets allocate nothing.
	pool.Get()
	pool.Get()
	if got := pool.Allocated(); got != 2 {
		t.Fatalf("pool allocated %d batches, want 2", got)
	}
}

// The steady state of emit, send, poll and recycle allocates nothing.
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	g := NewGate(2, 16) // a round sends about 9 buffers per channel
	hash := func(r int64) uint32 { return keygroup.Uint64(uint64(r)) }
	w := NewWriter([]*Channel{g.Channel(0), g.Channel(1)}, Hash(hash, 128), NewPool[int64](64), 0)
	recs := make([]int64, 256)
	for i := range recs {
		recs[i] = int64(i)
	}
	var sum int64
	round := func() {
		if err := w.EmitBatch(ctx, recs); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Emit(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Broadcast(ctx, barrier(1)); err != nil {
			t.Fatal(err)
		}
		for _, b, ok := g.Poll(); ok; _, b, ok = g.Poll() {
			if b.Kind == Data {
				batch := b.Data.(*Batch[int64])
				for _, r := range batch.Records {
					sum += r
				}
				batch.Recycle()
			}
		}
	}
	round() // warm up the pool and the queues
	sum = 0
	if allocs := testing.AllocsPerRun(20, round); allocs != 0 {
		t.Fatalf("%.1f allocations per round, want 0", allocs)
	}
	if want := int64(21 * 2 * 255 * 256 / 2); sum != want {
		t.Fatalf("sum %d, want %d", sum, want)
	}
}

func TestForwardEmitBatchAndClose(t *testing.T) {
	ctx := context.Background()
	gates, chans := consumers(2, 8)
	pool := NewPool[int](4)
	w := NewWriter(chans, Forward[int](), pool, 0)
	if w.Partitioner() != "FORWARD" {
		t.Fatalf("partitioner %s", w.Partitioner())
	}
	if err := w.EmitBatch(ctx, []int{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	w.Close() // drops the open [5 6] and returns its batch
	if got, want := drainAll(gates), "g0{0:data[1 2 3 4]} g1{}"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	pool.Get()
	pool.Get()
	if got := pool.Allocated(); got != 2 {
		t.Fatalf("allocated %d, want 2: Close did not recycle the open batch", got)
	}
}
