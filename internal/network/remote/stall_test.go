package remote

import (
	"context"
	"errors"
	"testing"

	"github.com/weirstream/weir/internal/network"
)

// produce emits n records into w, then end of partition, and reports the
// first error.
func produce(ctx context.Context, w *network.Writer[int64], n int) error {
	for i := range n {
		if err := w.Emit(ctx, int64(i)); err != nil {
			return err
		}
	}
	return w.Broadcast(ctx, network.Buffer{Kind: network.EndOfPartition})
}

// A consumer that stops polling stops its remote producer within bounded
// memory: at most credits buffers queued at the producer, credits held at
// the consumer, and the pools do not grow while stalled or after. Once the
// consumer polls again, every record arrives exactly.
func TestStalledConsumerStopsProducer(t *testing.T) {
	const credits, n = 4, 50000
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	_, cb := connect(t, a, b)
	ctx := context.Background()
	g := network.NewGate(1, credits)
	ic, err := cb.OpenInput(InputConfig{Key: key(0, 0), Gate: g, Channel: 0})
	if err != nil {
		t.Fatal(err)
	}
	o := outChannel(t, a, 0, 0, credits)
	w := network.NewWriter([]*OutChannel{o}, network.Forward[int64](), network.NewPool[int64](64), 0)
	done := make(chan error, 1)
	go func() { done <- produce(ctx, w, n) }()

	// The consumer polls nothing: the producer must block in Send.
	eventually(t, "the producer to block", func() bool {
		s := o.Stats()
		return s.BackpressureWaits > 0 && s.Queued == credits && g.Stats().Channels[0].QueuedData == credits
	})
	stalled := o.Stats()
	if stalled.BuffersAllocated > credits+2 || ic.Stats().BuffersAllocated > credits {
		t.Fatalf("stalled: producer pool %d, consumer pool %d buffers; want <= %d and <= %d", stalled.BuffersAllocated, ic.Stats().BuffersAllocated, credits+2, credits)
	}
	select {
	case err := <-done:
		t.Fatalf("producer finished against a stalled consumer: %v", err)
	default:
	}

	// Release the stall: everything arrives, in order, once.
	l := consume(ctx, g)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if l.err != nil {
		t.Fatal(l.err)
	}
	if len(l.values[0]) != n {
		t.Fatalf("%d records, want %d", len(l.values[0]), n)
	}
	for i, v := range l.values[0] {
		if v != int64(i) {
			t.Fatalf("record %d is %d", i, v)
		}
	}
	if got := o.Stats().BuffersAllocated; got > stalled.BuffersAllocated+1 {
		t.Fatalf("producer pool grew from %d to %d buffers after the stall", stalled.BuffersAllocated, got)
	}
	// The consumer task holds one more while it decodes a polled buffer
	// whose credit already went back.
	if got := ic.Stats().BuffersAllocated; got > credits+1 {
		t.Fatalf("consumer pool holds %d buffers, credits are %d (+1 being decoded)", got, credits)
	}
}

// Cancelling under full backpressure ends everything: the consumer's
// CancelPartition fails the producer's blocked Send with ErrCancelled, and
// closing the TaskManagers leaves no goroutine behind (TestMain's goleak).
func TestCancelUnderBackpressure(t *testing.T) {
	const credits = 2
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	_, cb := connect(t, a, b)
	g := network.NewGate(1, credits)
	ic, err := cb.OpenInput(InputConfig{Key: key(0, 0), Gate: g, Channel: 0})
	if err != nil {
		t.Fatal(err)
	}
	o := outChannel(t, a, 0, 0, credits)
	w := network.NewWriter([]*OutChannel{o}, network.Forward[int64](), network.NewPool[int64](8), 0)
	done := make(chan error, 1)
	go func() { done <- produce(context.Background(), w, 1<<30) }()
	eventually(t, "the producer to block", func() bool {
		s := o.Stats()
		return s.BackpressureWaits > 0 && s.Queued == credits && s.Bound
	})

	ic.Close()
	if err := <-done; !errors.Is(err, ErrCancelled) {
		t.Fatalf("producer ended with %v, want ErrCancelled", err)
	}
	w.Close()
	// Buffers left in the gate belong to the cancelled task; drain them as
	// it would.
	for _, buf, ok := g.Poll(); ok; _, buf, ok = g.Poll() {
		if s, isData := buf.Data.(*network.Serialized); isData {
			s.Release()
		}
	}
	if o.Stats().Queued != 0 {
		t.Fatal("cancelled channel kept its queue")
	}
}

// A producer blocked on credit whose task is cancelled (its context) gets
// the context's error and keeps its batch; a broken connection fails the
// consumer's channel through OnFailure.
func TestContextCancelAndBrokenConnection(t *testing.T) {
	const credits = 2
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	ca, cb := connect(t, a, b)
	g := network.NewGate(1, credits)
	fails := newFailures()
	if _, err := cb.OpenInput(InputConfig{Key: key(0, 0), Gate: g, Channel: 0, OnFailure: fails.record}); err != nil {
		t.Fatal(err)
	}
	o := outChannel(t, a, 0, 0, credits)
	pool := network.NewPool[int64](8)
	w := network.NewWriter([]*OutChannel{o}, network.Forward[int64](), pool, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- produce(ctx, w, 1<<30) }()
	// Bound: an unbound channel belongs to no connection, and a broken
	// one would not fail it.
	eventually(t, "the producer to block", func() bool { return o.Stats().BackpressureWaits > 0 && o.Stats().Bound })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("producer ended with %v, want context.Canceled", err)
	}
	w.Close()

	_ = ca.Close()
	if err := fails.wait(t); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("consumer channel failed with %v, want ErrConnClosed", err)
	}
	if err := o.Send(context.Background(), network.Buffer{Kind: network.EndOfData}); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("send after the connection broke: %v, want ErrConnClosed", err)
	}
	for _, buf, ok := g.Poll(); ok; _, buf, ok = g.Poll() {
		if s, isData := buf.Data.(*network.Serialized); isData {
			s.Release()
		}
	}
}
