package weir

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/runtime"
)

// linesOut collects an operator's output as "record@ts" lines.
type linesOut struct{ lines []string }

func (o *linesOut) Push(_ context.Context, batch []string, ts []int64) error {
	for i, v := range batch {
		o.lines = append(o.lines, fmt.Sprintf("%s@%d", v, ts[i]))
	}
	return nil
}

type side struct {
	Key  int64
	Name string
}

// openIntervalJoin opens an interval join operator on one subtask owning
// every key group, its output and late counter exposed.
func openIntervalJoin(t *testing.T, lower, upper int64) (*coProcessOp[int64, side, side, string], *intervalJoinFunc[int64, side, side, string], *linesOut, *atomic.Int64) {
	t.Helper()
	fn := &intervalJoinFunc[int64, side, side, string]{lower: lower, upper: upper, join: func(x, y side) string { return x.Name + y.Name }}
	key := func(s side) int64 { return s.Key }
	o := &coProcessOp[int64, side, side, string]{keyB: key, fn2: fn, push2: fn.ProcessElement2}
	o.processOp = processOp[int64, side, string]{key: key, hash: func(k int64) uint32 { return uint32(k) }, fn: coFirst[int64, side, side, string]{fn}}
	o.col.sides = &o.sideOutputs
	out := &linesOut{}
	if err := o.SetOutput(runtime.Output[string](out)); err != nil {
		t.Fatal(err)
	}
	late := &atomic.Int64{}
	oc := &runtime.OperatorContext{UID: "join", Name: "IntervalJoin", Parallelism: 1, MaxParallelism: 8,
		KeyGroups: keygroup.RangeFor(8, 1, 0), Logger: slog.New(slog.DiscardHandler), Now: time.Now, LateRecordsDropped: late}
	if err := o.Open(context.Background(), oc); err != nil {
		t.Fatal(err)
	}
	return o, fn, out, late
}

// buffered is the number of records of key k the join still holds.
func buffered(o *coProcessOp[int64, side, side, string], f *intervalJoinFunc[int64, side, side, string], k int64) (left, right int) {
	o.backend.SetCurrentKey(k, keygroup.Of(o.hash(k), o.maxP))
	for _, xs := range f.left.All() {
		left += len(xs)
	}
	for _, ys := range f.right.All() {
		right += len(ys)
	}
	return left, right
}

// TestIntervalJoinLateAndCleanup drives the interval join operator step by
// step: inclusive bounds, output stamped with the later timestamp, a
// record at the watermark dropped and counted, and each side's buffer
// cleaned by the watermark exactly when no partner can come any more.
func TestIntervalJoinLateAndCleanup(t *testing.T) {
	ctx := context.Background()
	o, f, out, late := openIntervalJoin(t, -2, 3) // y.ts in [x.ts-2, x.ts+3]
	step := func(first bool, ts int64, s side) {
		t.Helper()
		var err error
		if first {
			err = o.Push1(ctx, []side{s}, []int64{ts})
		} else {
			err = o.Push2(ctx, []side{s}, []int64{ts})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := func(lines ...string) {
		t.Helper()
		slices.Sort(out.lines) // buckets are visited in map order
		if !slices.Equal(out.lines, lines) {
			t.Fatalf("output %q, want %q", out.lines, lines)
		}
		out.lines = nil
	}
	watermark := func(wm int64) {
		t.Helper()
		if _, err := o.ProcessWatermark(ctx, wm); err != nil {
			t.Fatal(err)
		}
	}
	step(true, 10, side{1, "x10"})
	want()
	step(false, 13, side{1, "y13"}) // upper bound, inclusive
	want("x10y13@13")
	step(false, 14, side{1, "y14"}) // beyond it
	step(false, 11, side{2, "z11"}) // another key
	want()
	step(false, 8, side{1, "y8"}) // lower bound, inclusive
	want("x10y8@10")

	// x10 may still meet a y up to 13, y8 an x up to 10: the watermark 10
	// removes y8 only.
	watermark(10)
	if l, r := buffered(o, f, 1); l != 1 || r != 2 {
		t.Fatalf("after watermark 10: key 1 holds %d left and %d right records, want 1 and 2", l, r)
	}
	step(true, 10, side{1, "x10b"}) // at the watermark: late
	if late.Load() != 1 {
		t.Fatalf("late records %d, want 1", late.Load())
	}
	step(true, 11, side{1, "x11"}) // meets y13 and y14 (not y8: gone, and out of range)
	want("x11y13@13", "x11y14@14")
	step(true, 16, side{1, "x16"}) // meets y14 (16-2)
	want("x16y14@16")

	watermark(1 << 40)
	for k := int64(1); k <= 2; k++ {
		if l, r := buffered(o, f, k); l != 0 || r != 0 {
			t.Fatalf("after the last watermark key %d holds %d left and %d right records, want none", k, l, r)
		}
	}
	if late.Load() != 1 {
		t.Fatalf("late records %d, want 1", late.Load())
	}
	if err := o.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
