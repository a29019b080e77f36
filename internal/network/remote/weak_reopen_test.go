package remote

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/wire"
)

// TestWeakReopen: a weak input whose producer moved to another
// TaskManager is replaced on the same gate channel (Reopen). Its Position
// is the last buffer delivered; the buffers of the old input still queued
// in the gate keep their credit: the new producer starts with the rest,
// and is granted theirs as the task polls them, never more than the
// channel's credits in all. A gate channel full of the old input's
// buffers refuses the reopen until one is polled.
func TestWeakReopen(t *testing.T) {
	a, b, c := newTM(t, "tm-a"), newTM(t, "tm-b"), newTM(t, "tm-c")
	_, ca := connect(t, a, c)
	_, cb := connect(t, b, c)
	ctx := context.Background()
	const credits = 3
	callsA := weakProducer(t, a, credits, &releases{})
	callsB := weakProducer(t, b, credits, &releases{})
	pool := network.NewPool[int64](4)

	g := network.NewGate(1, credits)
	fails := newFailures()
	old, err := ca.OpenInput(InputConfig{Key: key(0, 0), Attempt: 1, Weak: true, Gate: g, Channel: 0, OnFailure: fails.record})
	if err != nil {
		t.Fatal(err)
	}
	if pos, ended := old.Position(); pos != (wire.LogPos{}) || ended {
		t.Fatalf("a fresh input's position %+v ended %t, want its From and not ended", pos, ended)
	}
	oa := nextCall(t, callsA).out
	eventually(t, "the first channel to be bound", func() bool { return oa.Stats().Bound })
	for i := range credits {
		if err := sendBatch(ctx, oa, pool, wire.LogPos{Buffers: uint64(i + 1), Records: uint64(i + 1)}, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the gate to hold every credit's buffer", func() bool { return old.Stats().Held == credits })
	old.Close()
	pos, ended := old.Position()
	if want := (wire.LogPos{Buffers: 3, Records: 3}); pos != want || ended {
		t.Fatalf("position %+v ended %t after 3 buffers, want %+v, not ended", pos, ended, want)
	}

	cfg := InputConfig{Key: key(0, 0), Attempt: 1, Weak: true, From: pos, Reopen: true, Gate: g, Channel: 0, OnFailure: fails.record}
	if _, err := cb.OpenInput(cfg); !errors.Is(err, ErrGateFull) {
		t.Fatalf("reopen onto a full gate channel: %v, want ErrGateFull", err)
	}
	if _, recs := nextBuffer(t, g); !slices.Equal(recs, []int64{0}) {
		t.Fatalf("first buffer %v, want [0]", recs)
	}
	ic, err := cb.OpenInput(cfg)
	if err != nil {
		t.Fatal(err)
	}
	call := nextCall(t, callsB)
	if call.from != pos {
		t.Fatalf("the new producer was asked from %+v, want %+v", call.from, pos)
	}
	ob := call.out
	eventually(t, "the new channel to be bound", func() bool { return ob.Stats().Bound })
	// Two old buffers are queued: the new producer holds one credit.
	sent := make(chan error, 8)
	go func() {
		for i := range 4 {
			sent <- sendBatch(ctx, ob, pool, wire.LogPos{Buffers: uint64(4 + i), Records: uint64(4 + i)}, int64(10+i))
		}
	}()
	for i, want := range [][]int64{{1}, {2}, {10}, {11}, {12}, {13}} {
		_, recs := nextBuffer(t, g)
		if !slices.Equal(recs, want) {
			t.Fatalf("buffer %d: %v, want %v", i, recs, want)
		}
		if held := ic.Stats().Held; held > credits {
			t.Fatalf("the new input holds %d buffers, more than the channel's %d credits", held, credits)
		}
	}
	for range 4 {
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	}
	if pos, _ := ic.Position(); pos != (wire.LogPos{Buffers: 7, Records: 7}) {
		t.Fatalf("new input's position %+v, want 7/7", pos)
	}
	if fails.count() != 0 {
		t.Fatalf("channel failures: %v", fails.errs)
	}
}

// TestWeakDrain: an input whose channel ended already subscribes to the
// producer's new attempt only to tell it the position; whatever arrives is
// dropped, its credit returned, and the end of partition ends it. The
// gate sees nothing.
func TestWeakDrain(t *testing.T) {
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	_, cb := connect(t, a, b)
	ctx := context.Background()
	calls := weakProducer(t, a, 1, &releases{})
	pool := network.NewPool[int64](4)
	g := network.NewGate(1, 1)
	from := wire.LogPos{Buffers: 9, Records: 40}
	if _, err := cb.OpenInput(InputConfig{Key: key(0, 0), Drain: true, Gate: g, Channel: 0}); err == nil {
		t.Fatal("Drain without Weak was accepted")
	}
	ic, err := cb.OpenInput(InputConfig{Key: key(0, 0), Weak: true, Drain: true, From: from, Gate: g, Channel: 0, OnFailure: func(err error) { t.Error(err) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, ended := ic.Position(); !ended {
		t.Fatal("a drained input's position says its channel has not ended: a later move would reopen it")
	}
	call := nextCall(t, calls)
	if call.from != from {
		t.Fatalf("asked from %+v, want %+v", call.from, from)
	}
	o := call.out
	for i := range 3 { // one credit: each needs the last one's back
		if err := sendBatch(ctx, o, pool, wire.LogPos{Buffers: uint64(11 + i), Records: uint64(41 + i)}, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Send(ctx, network.Buffer{Kind: network.EndOfPartition, LogBuffers: 14, LogRecords: 43}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the drained input to end", func() bool {
		ic.mu.Lock()
		defer ic.mu.Unlock()
		return ic.finished
	})
	if pos, _ := ic.Position(); pos != from {
		t.Fatalf("a drained input's position moved to %+v, want %+v", pos, from)
	}
	if _, b, ok := g.Poll(); ok {
		t.Fatalf("the gate got %s from a drained input", b.Kind)
	}
}

// TestWeakReopenFreedBeforeBind: the task reads the old input's queued
// buffers right after the reopen, before the new producer bound the
// channel; the credit they free is announced once the channel carries a
// frame, not lost on the way, so the producer gets every credit back.
func TestWeakReopenFreedBeforeBind(t *testing.T) {
	a, b, c := newTM(t, "tm-a"), newTM(t, "tm-b"), newTM(t, "tm-c")
	_, ca := connect(t, a, c)
	_, cb := connect(t, b, c)
	ctx := context.Background()
	const credits = 3
	callsA := weakProducer(t, a, credits, &releases{})
	callsB := weakProducer(t, b, credits, &releases{})
	pool := network.NewPool[int64](4)
	g := network.NewGate(1, credits)
	fails := newFailures()
	old, err := ca.OpenInput(InputConfig{Key: key(0, 0), Attempt: 1, Weak: true, Gate: g, Channel: 0, OnFailure: fails.record})
	if err != nil {
		t.Fatal(err)
	}
	oa := nextCall(t, callsA).out
	for i := range 2 {
		if err := sendBatch(ctx, oa, pool, wire.LogPos{Buffers: uint64(i + 1), Records: uint64(i + 1)}, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "two buffers in the gate", func() bool { return old.Stats().Held == 2 })
	old.Close()
	pos, _ := old.Position()
	ic, err := cb.OpenInput(InputConfig{Key: key(0, 0), Attempt: 1, Weak: true, From: pos, Reopen: true, Gate: g, Channel: 0, OnFailure: fails.record})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // before the new producer's channel is bound
		nextBuffer(t, g)
	}
	ob := nextCall(t, callsB).out
	sent := make(chan error, 1)
	go func() {
		for i := range credits {
			if err := sendBatch(ctx, ob, pool, wire.LogPos{Buffers: uint64(3 + i), Records: uint64(3 + i)}, int64(10+i)); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	eventually(t, "every credit's buffer to arrive unread", func() bool { return ic.Stats().Held == credits })
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if fails.count() != 0 {
		t.Fatalf("channel failures: %v", fails.errs)
	}
}
