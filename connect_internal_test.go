package weir

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/keygroup"
)

// pastTimer registers, for each record of the second input, an event-time
// timer at the record's timestamp: at or behind the watermark it is due
// at once.
type pastTimer struct{}

func (pastTimer) Open(context.Context, *KeyedContext[int64]) error { return nil }
func (pastTimer) ProcessElement1(side, *KeyedContext[int64], *Collector[string]) error {
	return nil
}
func (pastTimer) ProcessElement2(v side, kc *KeyedContext[int64], _ *Collector[string]) error {
	ts, _ := kc.Timestamp()
	kc.RegisterEventTimeTimer(ts)
	return nil
}
func (pastTimer) OnTimer(ts int64, kc *KeyedContext[int64], out *Collector[string]) error {
	out.Collect("fired")
	return nil
}

// TestCoProcessDueTimerOfSecondInput: a timer the second input registers
// at or before the watermark fires right after the batch, as one of the
// first input does (processOp.Push).
func TestCoProcessDueTimerOfSecondInput(t *testing.T) {
	ctx := context.Background()
	var fn KeyedCoProcessFunction[int64, side, side, string] = pastTimer{}
	key := func(s side) int64 { return s.Key }
	o := &coProcessOp[int64, side, side, string]{keyB: key, fn2: fn, push2: fn.ProcessElement2}
	o.processOp = processOp[int64, side, string]{key: key, hash: func(k int64) uint32 { return uint32(k) }, fn: coFirst(fn)}
	o.col.sides = &o.sideOutputs
	out := &linesOut{}
	if err := o.SetOutput(dataflow.Output[string](out)); err != nil {
		t.Fatal(err)
	}
	oc := &dataflow.OperatorContext{UID: "co", Name: "CoProcess", Parallelism: 1, MaxParallelism: 8,
		KeyGroups: keygroup.RangeFor(8, 1, 0), Logger: slog.New(slog.DiscardHandler), Now: time.Now}
	if err := o.Open(ctx, oc); err != nil {
		t.Fatal(err)
	}
	defer o.Close(ctx)
	if _, err := o.ProcessWatermark(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if err := o.Push2(ctx, []side{{1, "y"}}, []int64{50}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"fired@50"}; !slices.Equal(out.lines, want) {
		t.Fatalf("output %q, want %q", out.lines, want)
	}
}
