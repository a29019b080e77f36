package remote

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/network"
)

// TestAnnounceAndPrioritize covers the consumer's view of an alignment
// timeout on a remote channel: the producer announces a barrier queued
// behind data it cannot send (no credit), the consumer asks for it with
// Prioritize, and the barrier arrives as a priority event carrying the Seq
// of its position, ahead of the data it overtook, which then follows in
// order. Nothing is polled from the gate's channels meanwhile, so only the
// priority section can carry the announcement and the barrier.
func TestAnnounceAndPrioritize(t *testing.T) {
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	_, cb := connect(t, a, b)
	ctx := context.Background()
	fails := newFailures()

	o, err := NewOutChannel(OutChannelConfig{Key: key(0, 0), Codec: int64Codec{}, Credits: 1, Announce: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.mgr.Registry().Register(o); err != nil {
		t.Fatal(err)
	}
	g := network.NewGate(1, 1)
	ic, err := cb.OpenInput(InputConfig{Key: key(0, 0), Gate: g, Channel: 0, OnFailure: fails.record})
	if err != nil {
		t.Fatal(err)
	}
	pool := network.NewPool[int64](4)
	const batches = 4
	for i := range batches {
		bt := pool.Get()
		bt.Records = append(bt.Records, int64(i))
		if err := o.SendOverdraft(ctx, network.Buffer{Kind: network.Data, Data: bt}, math.MaxInt, nil); err != nil {
			t.Fatal(err)
		}
	}
	bar := checkpoint.Barrier{ID: 7, Timestamp: time.Unix(1, 0)}
	if err := o.Send(ctx, network.Buffer{Kind: network.Barrier, Barrier: bar}); err != nil {
		t.Fatal(err)
	}
	// The credit of the one batch the consumer granted is used: the rest
	// and the barrier stay at the producer.
	eventually(t, "one data frame sent", func() bool { return o.Stats().SentData == 1 })

	nextPriority := func(what string) network.Buffer {
		t.Helper()
		select {
		case <-g.PriorityReady():
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s in the priority section", what)
		}
		ch, buf, ok := g.PollPriority()
		if !ok || ch != 0 {
			t.Fatalf("PollPriority = %d, %+v, %v", ch, buf, ok)
		}
		return buf
	}
	ann := nextPriority("announcement")
	if ann.Kind != network.Announcement || ann.Barrier.ID != 7 || ann.Seq != batches {
		t.Fatalf("got %s id %d seq %d, want the announcement of barrier 7 at seq %d", ann.Kind, ann.Barrier.ID, ann.Seq, batches)
	}
	if o.Stats().Queued != batches-1 {
		t.Fatalf("%d batches queued at the producer, want %d", o.Stats().Queued, batches-1)
	}

	ic.Prioritize(7)
	pb := nextPriority("prioritized barrier")
	if pb.Kind != network.Barrier || pb.Barrier.ID != 7 || pb.Seq != batches || !pb.Barrier.Timestamp.Equal(bar.Timestamp) {
		t.Fatalf("got %s id %d seq %d, want barrier 7 at seq %d", pb.Kind, pb.Barrier.ID, pb.Seq, batches)
	}
	if got := o.Stats().Prioritized; got != 1 {
		t.Fatalf("Prioritized = %d, want 1", got)
	}
	// The overtaken data follows, in order, as the consumer polls.
	var got []int64
	for len(got) < batches {
		select {
		case <-g.Ready():
		case <-time.After(10 * time.Second):
			t.Fatalf("only %v arrived", got)
		}
		for ch, buf, ok := g.Poll(); ok; ch, buf, ok = g.Poll() {
			if buf.Kind != network.Data || ch != 0 {
				t.Fatalf("polled %s on %d after the barrier was prioritized", buf.Kind, ch)
			}
			s := buf.Data.(*network.Serialized)
			if got, err = decodeInt64s(got, s.Bytes); err != nil {
				t.Fatal(err)
			}
			if buf.Seq != uint64(len(got)) {
				t.Fatalf("data seq %d, want %d", buf.Seq, len(got))
			}
			s.Release()
		}
	}
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("data %v, want 0..%d in order", got, batches-1)
		}
	}
	// Another checkpoint's barrier is announced and stays in order.
	if err := o.Send(ctx, network.Buffer{Kind: network.Barrier, Barrier: checkpoint.Barrier{ID: 8}}); err != nil {
		t.Fatal(err)
	}
	if ann := nextPriority("announcement of 8"); ann.Kind != network.Announcement || ann.Barrier.ID != 8 {
		t.Fatalf("got %s %d, want the announcement of 8", ann.Kind, ann.Barrier.ID)
	}
	if fails.count() != 0 {
		t.Fatalf("channel failures: %v", fails.errs)
	}
	ic.Close()
	o.Close()
}
