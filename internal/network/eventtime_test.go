package network

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

var seedFlag = flag.Uint64("seed", 0, "run the seeded random tests with this seed only (0: a range of seeds)")

func wm(ts int64) Buffer        { return Buffer{Kind: Watermark, Watermark: ts} }
func wmStatus(idle bool) Buffer { return Buffer{Kind: WatermarkStatus, Idle: idle} }

func TestKindNamesAndClasses(t *testing.T) {
	for _, c := range []struct {
		k    Kind
		name string
	}{{Watermark, "watermark"}, {WatermarkStatus, "wm-status"}} {
		if c.k.String() != c.name || !c.k.IsEvent() || canOvertake(c.k) {
			t.Errorf("%d: String %q IsEvent %v canOvertake %v, want %q, true, false", c.k, c.k, c.k.IsEvent(), canOvertake(c.k), c.name)
		}
	}
	// Appended after the existing kinds: their values are unchanged.
	if Announcement != 5 || Watermark != 6 || WatermarkStatus != 7 {
		t.Fatalf("kind values moved: announcement %d watermark %d status %d", Announcement, Watermark, WatermarkStatus)
	}
}

// A timed writer's batches carry one timestamp per record: the given ones,
// NoTimestamp for records emitted without; watermarks and status changes
// follow every record emitted before them.
func TestTimedWriterCarriesTimesAndWatermarksFollowRecords(t *testing.T) {
	ctx := context.Background()
	gates, chans := consumers(2, 8)
	w := NewWriter(chans, Forward[int](), NewPool[int](3), 1, WithTimestamps())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.EmitTimed(ctx, 0, 100))
	must(w.Emit(ctx, 1))
	must(w.EmitBatchTimed(ctx, []int{2, 3}, []int64{102, NoTimestamp}))
	must(w.EmitBatchTimed(ctx, []int{4}, nil))
	must(w.Broadcast(ctx, wm(101)))
	must(w.EmitBatch(ctx, []int{5}))
	must(w.Broadcast(ctx, wmStatus(true)))
	must(w.Broadcast(ctx, wmStatus(false)))
	must(w.EmitTimed(ctx, 6, 200))
	must(w.Flush(ctx))
	const nt = NoTimestamp
	want := fmt.Sprintf("g0{0:wm101 0:idle 0:active} g1{0:data[0 1 2]t[100 %d 102] 0:data[3 4]t[%d %d] 0:wm101 0:data[5]t[%d] 0:idle 0:active 0:data[6]t[200]}", nt, nt, nt, nt)
	if got := drainAll(gates); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if err := w.EmitBatchTimed(ctx, []int{1, 2}, []int64{1}); err == nil {
		t.Fatal("EmitBatchTimed with 1 timestamp for 2 records succeeded")
	}
}

// An untimed writer's batches have nil Times, even from the timed methods
// and from a pool whose batches carried times before.
func TestUntimedWriterHasNoTimes(t *testing.T) {
	ctx := context.Background()
	pool := NewPool[int](2)
	b := pool.Get()
	b.Records, b.Times = append(b.Records, 9), append(b.Times, 9)
	b.Recycle()
	if b.Times == nil || len(b.Times) != 0 {
		t.Fatalf("Recycle left Times %v, want truncated", b.Times)
	}
	gates, chans := consumers(1, 8)
	w := NewWriter(chans, Forward[int](), pool, 0)
	if err := w.EmitTimed(ctx, 1, 5); err != nil {
		t.Fatal(err)
	}
	if err := w.EmitBatchTimed(ctx, []int{2, 3}, []int64{6}); err != nil { // ignored, so no length check
		t.Fatal(err)
	}
	if err := w.Broadcast(ctx, wm(7)); err != nil {
		t.Fatal(err)
	}
	if got, want := drainAll(gates), "g0{0:data[1 2] 0:data[3] 0:wm7}"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// Watermarks and status changes never overtake: every priority path
// refuses them.
func TestWatermarksCannotOvertake(t *testing.T) {
	_, chans := consumers(1, 8)
	w := NewWriter(chans, Forward[int](), NewPool[int](2), 0, WithTimestamps())
	for _, b := range []Buffer{wm(1), wmStatus(true)} {
		if err := w.BroadcastPriority(b); err == nil {
			t.Errorf("priority broadcast of %s succeeded", b.Kind)
		}
		if err := chans[0].SendPriority(b); err == nil {
			t.Errorf("priority send of %s succeeded", b.Kind)
		}
		if err := chans[0].DeliverPriority(b); err == nil {
			t.Errorf("priority delivery of %s succeeded", b.Kind)
		}
	}
}

// In the gate, watermark events are ordinary events: a blocked channel keeps
// them queued, a priority barrier overtakes them (its overtaken data are the
// Data buffers only, the watermark is no channel state), Prioritize leaves
// them in place, and they come out in order behind the overtaken data.
func TestGateQueuesWatermarksInOrder(t *testing.T) {
	p := NewPool[int](4)
	g := NewGate(2, 8)
	c0, c1 := g.Channel(0), g.Channel(1)
	d1 := dataBuf(p, 1)
	mustSend(t, c0, d1)
	mustSend(t, c0, wm(10))
	mustSend(t, c0, wmStatus(true))
	mustSend(t, c0, barrier(1))
	mustSend(t, c1, wm(20))
	g.Block(0)
	g.Prioritize(1) // moves the barrier, not the watermark events
	d2 := dataBuf(p, 2)
	mustSend(t, c0, d2)
	mustSend(t, c0, wmStatus(false))
	mustSendPriority(t, c0, barrier(2))
	if got, want := drainSeq(g), "0:!barrier1@1 0:!barrier2@2 1:wm20@0"; got != want {
		t.Fatalf("blocked: got  %s\nwant %s", got, want)
	}
	if got := g.AppendOvertaken(nil, 0, 2); len(got) != 2 || got[0] != d1.Data || got[1] != d2.Data {
		t.Fatalf("overtaken %v, want the two batches only", got)
	}
	g.Unblock(0)
	if got, want := drainSeq(g), "0:data[1]@1 0:wm10@1 0:idle@1 0:data[2]@2 0:active@2"; got != want {
		t.Fatalf("unblocked: got  %s\nwant %s", got, want)
	}
	if s := g.Stats().Channels[0]; s.Credits != 8 {
		t.Fatalf("events took credit: %+v", s)
	}
}

// TestTimedWriterRandom drives a timed and an untimed writer of every
// strategy with the same seeded random operations and checks the timed
// one's output against the untimed one's (same records, batches and events
// in the same order) and against the timestamps each record was emitted
// with (records are unique). Run one seed with -seed.
func TestTimedWriterRandom(t *testing.T) {
	seeds := []uint64{*seedFlag}
	if *seedFlag == 0 {
		seeds = nil
		for s := range uint64(200) {
			seeds = append(seeds, s+1)
		}
	}
	parts := map[string]func() Partitioner[int]{
		"hash":      func() Partitioner[int] { return Hash(func(r int) uint32 { return uint32(r) * 2654435761 }, 16) },
		"forward":   Forward[int],
		"rebalance": Rebalance[int],
		"broadcast": Broadcast[int],
		"custom":    func() Partitioner[int] { return Custom(func(r int, n int) int { return r % n }) },
	}
	for _, name := range []string{"hash", "forward", "rebalance", "broadcast", "custom"} {
		for _, seed := range seeds {
			if err := timedRandom(seed, parts[name]); err != nil {
				t.Fatalf("%s seed %d (rerun with -run TestTimedWriterRandom -seed %d): %v", name, seed, seed, err)
			}
		}
	}
}

func timedRandom(seed uint64, part func() Partitioner[int]) error {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 12))
	n, size := 1+rng.IntN(3), 1+rng.IntN(5)
	tg, tc := consumers(n, 1024) // more than the buffers one run sends: never waits
	ug, uc := consumers(n, 1024) // more than the buffers one run sends: never waits
	tw := NewWriter(tc, part(), NewPool[int](size), 0, WithTimestamps())
	uw := NewWriter(uc, part(), NewPool[int](size), 0)
	times := map[int]int64{}
	next := 0
	stamp := func() int64 {
		if rng.IntN(4) == 0 {
			return NoTimestamp
		}
		return rng.Int64N(1000) - 500
	}
	both := func(f func(w *Writer[int]) error) error {
		if err := f(tw); err != nil {
			return err
		}
		return f(uw)
	}
	for range 1 + rng.IntN(60) {
		var err error
		switch op := rng.IntN(7); op {
		case 0, 1: // EmitTimed
			r, ts := next, stamp()
			next++
			times[r] = ts
			err = both(func(w *Writer[int]) error { return w.EmitTimed(ctx, r, ts) })
		case 2: // Emit
			r := next
			next++
			times[r] = NoTimestamp
			err = both(func(w *Writer[int]) error { return w.Emit(ctx, r) })
		case 3, 4: // EmitBatchTimed, ts nil or not
			k := rng.IntN(2 * size)
			rs := make([]int, k)
			var ts []int64
			if rng.IntN(3) > 0 {
				ts = make([]int64, k)
			}
			for i := range rs {
				rs[i] = next
				next++
				times[rs[i]] = NoTimestamp
				if ts != nil {
					ts[i] = stamp()
					times[rs[i]] = ts[i]
				}
			}
			err = both(func(w *Writer[int]) error { return w.EmitBatchTimed(ctx, rs, ts) })
		case 5:
			b := wm(rng.Int64N(1000))
			if rng.IntN(3) == 0 {
				b = wmStatus(rng.IntN(2) == 0)
			}
			err = both(func(w *Writer[int]) error { return w.Broadcast(ctx, b) })
		case 6:
			err = both(func(w *Writer[int]) error { return w.Flush(ctx) })
		}
		if err != nil {
			return err
		}
	}
	if err := both(func(w *Writer[int]) error { return w.Flush(ctx) }); err != nil {
		return err
	}
	for i := range n {
		for {
			_, tb, tok := tg[i].Poll()
			_, ub, uok := ug[i].Poll()
			if tok != uok {
				return fmt.Errorf("channel %d: timed writer sent more or fewer buffers", i)
			}
			if !tok {
				break
			}
			if tb.Kind != ub.Kind || tb.Watermark != ub.Watermark || tb.Idle != ub.Idle {
				return fmt.Errorf("channel %d: timed %s, untimed %s", i, describe(0, tb), describe(0, ub))
			}
			if tb.Kind != Data {
				continue
			}
			t, u := tb.Data.(*Batch[int]), ub.Data.(*Batch[int])
			if u.Times != nil {
				return fmt.Errorf("untimed batch with times %v", u.Times)
			}
			if !slices.Equal(t.Records, u.Records) || len(t.Times) != len(t.Records) {
				return fmt.Errorf("channel %d: timed %v times %v, untimed %v", i, t.Records, t.Times, u.Records)
			}
			for j, r := range t.Records {
				if t.Times[j] != times[r] {
					return fmt.Errorf("channel %d: record %d has time %d, emitted with %d", i, r, t.Times[j], times[r])
				}
			}
			t.Recycle()
			u.Recycle()
		}
	}
	return nil
}
