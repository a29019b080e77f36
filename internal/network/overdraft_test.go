package network

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/weirstream/weir/internal/keygroup"
)

// A writer WithOverdraft sends up to max full batches beyond its credits
// without waiting; the step into overdraft charges the Debt once, and the
// poll that brings the credits back to 0 repays it and raises Ready.
func TestOverdraftChargesAndRepaysDebt(t *testing.T) {
	gates, chans := consumers(1, 1)
	g := gates[0]
	d := NewDebt()
	w := NewWriter(chans, Forward[int](), NewPool[int](1), 0, WithOverdraft(2, d))
	for i := range 3 { // 1 credit + 2 overdrawn; a cancelled context proves no wait
		if err := w.Emit(cancelled(), i); err != nil {
			t.Fatalf("emit %d: %v", i, err)
		}
		if want := i >= 1; d.InDebt() != want {
			t.Fatalf("after emit %d: in debt %v, want %v", i, d.InDebt(), want)
		}
	}
	if err := w.Emit(cancelled(), 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("emit beyond the overdraft: got %v, want it to wait (context.Canceled)", err)
	}
	s := g.Stats().Channels[0]
	if s.Credits != -2 || s.Overdraft != 2 || s.QueuedData != 3 || s.BackpressureWaits != 1 || !s.Backpressured() {
		t.Fatalf("stats %+v", s)
	}
	if isReady(d.Ready()) {
		t.Fatal("debt ready while in debt")
	}
	for i, wantDebt := range []bool{true, false, false} {
		_, b, _ := g.Poll()
		b.Data.(*Batch[int]).Recycle()
		if d.InDebt() != wantDebt {
			t.Fatalf("after poll %d: in debt %v, want %v", i, d.InDebt(), wantDebt)
		}
		if got := isReady(d.Ready()); got != (i == 1) {
			t.Fatalf("after poll %d: debt ready %v, want it exactly when the debt reached 0", i, got)
		}
	}
	if s := g.Stats().Channels[0]; s.Credits != 1 || s.Overdraft != 0 {
		t.Fatalf("stats after polls %+v", s)
	}
}

// One Debt counts the overdrawn channels of all writers of a task, and is
// repaid only when the last of them is.
func TestDebtIsSharedByChannelsAndWriters(t *testing.T) {
	gates, chans := consumers(3, 1)
	d := NewDebt()
	pool := NewPool[int](1)
	w1 := NewWriter(chans[:2], Broadcast[int](), pool, 0, WithOverdraft(1, d))
	w2 := NewWriter(chans[2:], Forward[int](), pool, 0, WithOverdraft(1, d))
	for _, w := range []*Writer[int]{w1, w2} {
		for i := range 2 {
			if err := w.Emit(cancelled(), i); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := d.n.Load(); got != 3 {
		t.Fatalf("debt %d, want 3 overdrawn channels", got)
	}
	for i, g := range gates {
		for range 2 {
			_, b, _ := g.Poll()
			b.Data.(*Batch[int]).Recycle()
		}
		last := i == len(gates)-1
		if d.InDebt() == last || isReady(d.Ready()) != last {
			t.Fatalf("after repaying channel %d: in debt %v", i, d.InDebt())
		}
	}
}

// Beyond the overdraft a send waits for credit; the poll that repays the
// debt also lets it through, which overdraws (and charges) again.
func TestSendBeyondOverdraftWaitsForPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gates, chans := consumers(1, 1)
		g := gates[0]
		d := NewDebt()
		w := NewWriter(chans, Forward[int](), NewPool[int](1), 0, WithOverdraft(1, d))
		var sent atomic.Int64
		done := make(chan error)
		go func() {
			for i := range 3 {
				if err := w.Emit(context.Background(), i); err != nil {
					done <- err
					return
				}
				sent.Add(1)
			}
			done <- nil
		}()
		synctest.Wait()
		if got := sent.Load(); got != 2 {
			t.Fatalf("sent %d before waiting, want 2 (1 credit + 1 overdraft)", got)
		}
		if s := g.Stats().Channels[0]; s.Waiting != 1 || s.Overdraft != 1 {
			t.Fatalf("stats while waiting %+v", s)
		}
		_, b, _ := g.Poll()
		b.Data.(*Batch[int]).Recycle()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !d.InDebt() || !isReady(d.Ready()) {
			t.Fatalf("in debt %v: want in debt again, with the repayment signalled", d.InDebt())
		}
		if got, want := drain(g), "0:data[1] 0:data[2]"; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
		if d.InDebt() {
			t.Fatal("in debt after draining")
		}
	})
}

// Broadcast sends the open batches without waiting for credit, then the
// event, so the event's Seq covers every record emitted before it; without
// WithOverdraft nothing is charged, and the next full batch waits until the
// channel has credit again.
func TestBroadcastFlushesWithoutWaiting(t *testing.T) {
	gates, chans := consumers(2, 1)
	w := NewWriter(chans, Rebalance[int](), NewPool[int](2), 0)
	for i := range 3 { // [0 1] to channel 0 (its only credit), 2 open for channel 1
		if err := w.Emit(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Emit(context.Background(), 3); err != nil { // [2 3] to channel 1
		t.Fatal(err)
	}
	if err := w.Emit(context.Background(), 4); err != nil { // open on channel 0, which has no credit
		t.Fatal(err)
	}
	if err := w.Broadcast(cancelled(), barrier(1)); err != nil {
		t.Fatal(err)
	}
	if s := gates[0].Stats().Channels[0]; s.Credits != -1 || s.Overdraft != 1 {
		t.Fatalf("channel 0 stats %+v", s)
	}
	// The rest of channel 0's chunk, [5], is a full batch and waits: the
	// flush kept the channel, which has no credit.
	if err := w.Emit(cancelled(), 5); !errors.Is(err, context.Canceled) {
		t.Fatalf("full batch without credit: got %v, want context.Canceled", err)
	}
	if got, want := drainSeqAll(gates), "g0{0:data[0 1]@1 0:data[4]@2 0:barrier1@2} g1{0:data[2 3]@1 0:barrier1@1}"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// BroadcastPriority flushes the open batches, then overtakes them: the
// overtaken data of each channel is exactly what was emitted before.
func TestBroadcastPriorityOvertakesFlushedBatches(t *testing.T) {
	gates, chans := consumers(2, 1)
	d := NewDebt()
	w := NewWriter(chans, Forward[int](), NewPool[int](2), 1, WithOverdraft(1, d))
	for i := range 5 {
		if err := w.Emit(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.BroadcastPriority(barrier(7)); err != nil {
		t.Fatal(err)
	}
	// 1 credit + 1 overdraft + 1 flushed beyond the limit.
	if s := gates[1].Stats().Channels[0]; s.Overdraft != 2 || s.PriorityQueued != 1 || !d.InDebt() {
		t.Fatalf("stats %+v, in debt %v", s, d.InDebt())
	}
	if err := w.BroadcastPriority(dataBuf(NewPool[int](1), 1)); err == nil {
		t.Fatal("priority broadcast of data succeeded")
	}
	if err := w.BroadcastPriority(Buffer{Kind: EndOfPartition}); err == nil {
		t.Fatal("priority broadcast of end of partition succeeded")
	}
	ch, b, _ := gates[1].Poll()
	if got := describeSeq(ch, b); got != "0:!barrier7@3" {
		t.Fatalf("first poll %s", got)
	}
	var recs []int
	for _, data := range gates[1].AppendOvertaken(nil, 0, b.Seq) {
		recs = append(recs, data.(*Batch[int]).Records...)
	}
	if len(recs) != 5 || recs[0] != 0 || recs[4] != 4 {
		t.Fatalf("overtaken records %v, want 0..4", recs)
	}
	if got, want := drainSeqAll(gates), "g0{0:!barrier7@0} g1{0:data[0 1]@1 0:data[2 3]@2 0:data[4]@3}"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if d.InDebt() {
		t.Fatal("in debt after draining")
	}
}

func TestWithOverdraftPanicsOnBadArguments(t *testing.T) {
	for name, f := range map[string]func(){
		"negative": func() { WithOverdraft(-1, NewDebt()) },
		"nil debt": func() { WithOverdraft(2, nil) },
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
	WithOverdraft(0, nil) // no overdraft needs no debt
}

func drainSeqAll(gates []*Gate) string {
	var out []string
	for i, g := range gates {
		out = append(out, fmt.Sprintf("g%d{%s}", i, drainSeq(g)))
	}
	return strings.Join(out, " ")
}

// The unaligned paths allocate nothing in steady state either: overdrawing
// and repaying, priority broadcasts, announcements, PollPriority and
// AppendOvertaken into a reused slice.
func TestPriorityPathsDoNotAllocate(t *testing.T) {
	ctx := context.Background()
	g := NewGate(2, 4, WithAnnouncements())
	d := NewDebt()
	hash := func(r int64) uint32 { return keygroup.Uint64(uint64(r)) }
	w := NewWriter([]*Channel{g.Channel(0), g.Channel(1)}, Hash(hash, 128), NewPool[int64](64), 0, WithOverdraft(8, d))
	recs := make([]int64, 500)
	for i := range recs {
		recs[i] = int64(i)
	}
	scratch := make([]any, 0, 16)
	var sum int64
	var overtaken int
	round := func() {
		if err := w.EmitBatch(ctx, recs); err != nil { // about 4 batches per channel: overdraws
			t.Fatal(err)
		}
		if err := w.Broadcast(ctx, barrier(1)); err != nil {
			t.Fatal(err)
		}
		if err := w.EmitBatch(ctx, recs[:100]); err != nil {
			t.Fatal(err)
		}
		if err := w.BroadcastPriority(barrier(2)); err != nil {
			t.Fatal(err)
		}
		for ch, b, ok := g.PollPriority(); ok; ch, b, ok = g.PollPriority() {
			if b.Kind == Barrier {
				scratch = g.AppendOvertaken(scratch[:0], ch, b.Seq)
				overtaken += len(scratch)
			}
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
		if d.InDebt() {
			t.Fatal("in debt after draining")
		}
	}
	round() // warm up the pool and the queues
	sum, overtaken = 0, 0
	if allocs := testing.AllocsPerRun(20, round); allocs != 0 {
		t.Fatalf("%.1f allocations per round, want 0", allocs)
	}
	if want := int64(21 * (499*500/2 + 99*100/2)); sum != want {
		t.Fatalf("sum %d, want %d", sum, want)
	}
	if overtaken < 21*8 {
		t.Fatalf("%d batches overtaken in 21 rounds: the priority barriers overtook too little", overtaken)
	}
}
