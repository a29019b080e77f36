package weir

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/keygroup"
)

type benchEvent struct{ I, Account, Amount int64 }
type benchResult struct{ I, Account, Count, Total int64 }
type benchTotals struct{ Count, Total int64 }

// benchAggregate is the demo's keyed count and sum.
type benchAggregate struct{ st ValueState[benchTotals] }

func (a *benchAggregate) Open(_ context.Context, kc *KeyedContext[int64]) (err error) {
	a.st, err = GetValueState[benchTotals](kc, "totals")
	return err
}

func (a *benchAggregate) ProcessElement(e benchEvent, _ *KeyedContext[int64], out *Collector[benchResult]) error {
	t, _ := a.st.Value()
	t.Count++
	t.Total += e.Amount
	a.st.Update(t)
	out.Collect(benchResult{I: e.I, Account: e.Account, Count: t.Count, Total: t.Total})
	return nil
}

type discardOut[T any] struct{ n int }

func (d *discardOut[T]) Push(_ context.Context, b []T, _ []int64) error { d.n += len(b); return nil }

// BenchmarkKeyedProcessPush is the keyed operator's CPU cost per record on
// one goroutine: batches of 1024 demo events (keys scattered as the demo's
// accounts) pushed into a KeyedProcess with heap state, one subtask owning
// every key group. ns/op is per record.
func BenchmarkKeyedProcessPush(b *testing.B) {
	for _, keys := range []int64{1000, 10000, 1000000} {
		b.Run("keys="+itoa(keys), func(b *testing.B) {
			ctx := context.Background()
			h, err := keygroup.Hasher[int64]()
			if err != nil {
				b.Fatal(err)
			}
			var fn KeyedProcessFunction[int64, benchEvent, benchResult] = &benchAggregate{}
			o := &processOp[int64, benchEvent, benchResult]{key: func(e benchEvent) int64 { return e.Account }, hash: h, fn: fn}
			out := &discardOut[benchResult]{}
			if err := o.SetOutput(dataflow.Output[benchResult](out)); err != nil {
				b.Fatal(err)
			}
			oc := &dataflow.OperatorContext{UID: "agg", Name: "KeyedProcess", Parallelism: 1, MaxParallelism: 128,
				KeyGroups: keygroup.RangeFor(128, 1, 0), Logger: slog.New(slog.DiscardHandler), Now: time.Now}
			if err := o.Open(ctx, oc); err != nil {
				b.Fatal(err)
			}
			defer o.Close(ctx)
			// 128 batches generated up front, cycled through.
			batches := make([][]benchEvent, 128)
			for n := range batches {
				batches[n] = make([]benchEvent, 1024)
				for j := range batches[n] {
					i := int64(n*1024 + j)
					batches[n][j] = benchEvent{I: i, Account: int64((uint64(i) % uint64(keys)) * 7919 % uint64(keys)), Amount: i%1000 + 1}
				}
			}
			for _, batch := range batches {
				if err := o.Push(ctx, batch, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i, n := 0, 0; i < b.N; i, n = i+1024, (n+1)%len(batches) {
				if err := o.Push(ctx, batches[n], nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(n int64) string {
	switch {
	case n >= 1000000:
		return fmtInt(n/1000000) + "M"
	case n >= 1000:
		return fmtInt(n/1000) + "k"
	}
	return fmtInt(n)
}

func fmtInt(n int64) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return fmtInt(n/10) + string(rune('0'+n%10))
}
