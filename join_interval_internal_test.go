package weir

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/keygroup"
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
	o.processOp = processOp[int64, side, string]{key: key, hash: func(k int64) uint32 { return uint32(k) }, fn: coFirst(fn)}
	o.col.sides = &o.sideOutputs
	out := &linesOut{}
	if err := o.SetOutput(dataflow.Output[string](out)); err != nil {
		t.Fatal(err)
	}
	late := &atomic.Int64{}
	oc := &dataflow.OperatorContext{UID: "join", Name: "IntervalJoin", Parallelism: 1, MaxParallelism: 8,
		KeyGroups: keygroup.RangeFor(8, 1, 0), Logger: slog.New(slog.DiscardHandler), Now: time.Now, LateRecordsDropped: late}
	if err := o.Open(context.Background(), oc); err != nil {
		t.Fatal(err)
	}
	return o, fn, out, late
}
