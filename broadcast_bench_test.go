package weir

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/keygroup"
)

// benchRules is the demo's keyed count and sum plus, per record, a
// lookup of its account's rule: in broadcast state (bcast) or, for the
// baseline, in a plain map of the function (plain).
type benchRules struct {
	st    ValueState[benchTotals]
	bcast *BroadcastState[int64, int64]
	plain map[int64]int64
}

var benchRuleState = BroadcastStateOf[int64, int64]("rules")

func (a *benchRules) Open(_ context.Context, kc *KeyedContext[int64]) (err error) {
	if a.plain == nil {
		if a.bcast, err = GetBroadcastState(kc, benchRuleState); err != nil {
			return err
		}
	}
	a.st, err = GetValueState[benchTotals](kc, "totals")
	return err
}

func (a *benchRules) ProcessElement(e benchEvent, _ *KeyedContext[int64], out *Collector[benchResult]) error {
	var limit int64
	if a.plain != nil {
		limit = a.plain[e.Account%64]
	} else {
		limit, _ = a.bcast.Get(e.Account % 64)
	}
	t, _ := a.st.Value()
	t.Count++
	t.Total += e.Amount
	a.st.Update(t)
	if t.Total > limit {
		out.Collect(benchResult{I: e.I, Account: e.Account, Count: t.Count, Total: t.Total})
	}
	return nil
}

func (a *benchRules) ProcessBroadcastElement(v int64, _ *KeyedBroadcastContext[int64], _ *Collector[benchResult]) error {
	a.bcast.Put(v%64, v)
	return nil
}

// BenchmarkKeyedBroadcastPush is the keyed broadcast operator's CPU cost
// per record on one goroutine (ns/op is per record), beside its baseline
// in the same run: the same function as a KeyedProcess reading its rules
// from a Go map. keyed: batches of 1024 events over 10,000 accounts, each
// reading one of 64 rules; broadcast: batches of 1024 rule updates.
// Neither may allocate per record (allocs/op 0).
func BenchmarkKeyedBroadcastPush(b *testing.B) {
	ctx := context.Background()
	h, err := keygroup.Hasher[int64]()
	if err != nil {
		b.Fatal(err)
	}
	oc := func() *dataflow.OperatorContext {
		return &dataflow.OperatorContext{UID: "rules", Name: "KeyedBroadcastProcess", Parallelism: 1, MaxParallelism: 128,
			KeyGroups: keygroup.RangeFor(128, 1, 0), Logger: slog.New(slog.DiscardHandler), Now: time.Now}
	}
	key := func(e benchEvent) int64 { return e.Account }
	events := make([][]benchEvent, 64)
	for n := range events {
		events[n] = make([]benchEvent, 1024)
		for j := range events[n] {
			i := int64(n*1024 + j)
			events[n][j] = benchEvent{I: i, Account: int64(uint64(i) % 10000 * 7919 % 10000), Amount: i%1000 + 1}
		}
	}
	rules := make([]int64, 1024)
	for i := range rules {
		rules[i] = int64(i) * 1000
	}
	run := func(b *testing.B, push func([]benchEvent) error) {
		for _, batch := range events {
			if err := push(batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i, n := 0, 0; i < b.N; i, n = i+1024, (n+1)%len(events) {
			if err := push(events[n]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("baseline=KeyedProcess+map", func(b *testing.B) {
		plain := map[int64]int64{}
		for _, r := range rules {
			plain[r/1000%64] = r
		}
		o := &processOp[int64, benchEvent, benchResult]{key: key, hash: h, fn: &benchRules{plain: plain}}
		if err := o.SetOutput(dataflow.Output[benchResult](&discardOut[benchResult]{})); err != nil {
			b.Fatal(err)
		}
		if err := o.Open(ctx, oc()); err != nil {
			b.Fatal(err)
		}
		defer o.Close(ctx)
		run(b, func(batch []benchEvent) error { return o.Push(ctx, batch, nil) })
	})
	newOp := func(b *testing.B) *keyedBroadcastOp[int64, benchEvent, int64, benchResult] {
		fn := &benchRules{}
		o := &keyedBroadcastOp[int64, benchEvent, int64, benchResult]{fnB: fn, pushB: fn.ProcessBroadcastElement}
		o.bs.decls = []broadcastDecl{benchRuleState.broadcastDecl()}
		o.processOp = processOp[int64, benchEvent, benchResult]{key: key, hash: h, fn: firstInput[int64, benchEvent, benchResult]{fn: fn, open: fn.Open, process: fn.ProcessElement}, bcast: &o.bs}
		o.col.sides = &o.sideOutputs
		if err := o.SetOutput(dataflow.Output[benchResult](&discardOut[benchResult]{})); err != nil {
			b.Fatal(err)
		}
		if err := o.Open(ctx, oc()); err != nil {
			b.Fatal(err)
		}
		if err := o.Push2(ctx, rules, nil); err != nil {
			b.Fatal(err)
		}
		return o
	}
	b.Run("keyed", func(b *testing.B) {
		o := newOp(b)
		defer o.Close(ctx)
		run(b, func(batch []benchEvent) error { return o.Push1(ctx, batch, nil) })
	})
	b.Run("broadcast", func(b *testing.B) {
		o := newOp(b)
		defer o.Close(ctx)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += len(rules) {
			if err := o.Push2(ctx, rules, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
