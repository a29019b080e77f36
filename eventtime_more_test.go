package weir_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
)

// TestAssignTimestampsMidstream: timestamps and watermarks assigned after
// a map drive event-time windows as a source's would.
func TestAssignTimestampsMidstream(t *testing.T) {
	env, log := newEnv(testConfig(t, 2, "50ms"))
	const n, size = 2000, 250
	plain := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithCount(n)))
	doubled := weir.Map(plain, func(i int64) tsEvent { return tsEvent{I: i, K: i % 3, TS: i*5 + 40 - (i*13)%41} })
	timed := weir.AssignTimestampsAndWatermarks(doubled, weir.ForBoundedOutOfOrderness[tsEvent](40*time.Millisecond).
		WithTimestampAssigner(func(e tsEvent, _ int64) int64 { return e.TS }))
	w := weir.Window(weir.KeyBy(timed, func(e tsEvent) int64 { return e.K }), weir.TumblingEventTimeWindows(size*time.Millisecond))
	out := sinkLines(t, weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, string] { return countLines{} }).UID("w"))
	execute(t, env, log)
	want := map[string]int{}
	for i := int64(0); i < n; i++ {
		ts := i*5 + 40 - (i*13)%41
		want[fmt.Sprintf("%d,%d,%d", i%3, ts-ts%size, ts-ts%size+size)]++
	}
	var lines []string
	for k, c := range want {
		lines = append(lines, fmt.Sprintf("%s,%d", k, c))
	}
	sameMultiset(t, lines, committed(t, out))
}

// TestCountWindows: global windows fire every n elements of a key with a
// purging count trigger.
func TestCountWindows(t *testing.T) {
	env, log := newEnv(testConfig(t, 2, "50ms"))
	const n, k = 1000, 4
	w := weir.Window(weir.KeyBy(tsEvents(env, n, k), func(e tsEvent) int64 { return e.K }), weir.GlobalWindows()).
		Trigger(weir.PurgingCountTrigger(10))
	counts := weir.Map(weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, int] { return sizeFn{} }), func(c int) string { return fmt.Sprint(c) })
	out := sinkLines(t, counts.UID("c"))
	execute(t, env, log)
	var want []string
	for i := 0; i < n/10; i++ {
		want = append(want, "10")
	}
	sameMultiset(t, want, committed(t, out))
}

type sizeFn struct{}

func (sizeFn) Process(_ int64, _ *weir.WindowContext, es []tsEvent, out *weir.Collector[int]) error {
	out.Collect(len(es))
	return nil
}

// TestProcessingTimeWindowsEndOfInput: processing-time windows count
// every record, including those in windows still open when a bounded
// input ends.
func TestProcessingTimeWindowsEndOfInput(t *testing.T) {
	env, log := newEnv(testConfig(t, 2, "50ms"))
	const n = 3000
	src := weir.FromSource(env, datagen.New(func(i int64) tsEvent { return tsEvent{I: i, K: i % 3} }, datagen.WithCount(n), datagen.WithRate(20000)))
	w := weir.Window(weir.KeyBy(src, func(e tsEvent) int64 { return e.K }), weir.TumblingProcessingTimeWindows(20*time.Millisecond))
	counts := weir.Map(weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, int] { return sizeFn{} }), func(c int) string { return fmt.Sprint(c) })
	out := sinkLines(t, counts.UID("c"))
	execute(t, env, log)
	total := 0
	lines := committed(t, out)
	for _, l := range lines {
		var c int
		fmt.Sscan(l, &c)
		total += c
	}
	if total != n {
		t.Fatalf("processing-time windows counted %d records, want %d", total, n)
	}
	if len(lines) < 6 {
		t.Fatalf("%d firings for a 150 ms input in 20 ms windows over 3 keys: the windows did not fire on time", len(lines))
	}
}

// idleSource: subtask 0 emits events with ever later times until
// cancelled; every other subtask emits nothing.
type idleSource struct {
	sub int
	i   int64
}

func (s *idleSource) Open(_ context.Context, rc *weir.RuntimeContext) error {
	s.sub = rc.Subtask()
	return nil
}

func (s *idleSource) Read(ctx context.Context, dst []tsEvent, max int) ([]tsEvent, error) {
	time.Sleep(2 * time.Millisecond)
	if s.sub != 0 {
		return dst, nil
	}
	for range 10 {
		dst = append(dst, tsEvent{I: s.i, K: s.i % 2, TS: s.i * 10})
		s.i++
	}
	return dst, nil
}
func (s *idleSource) SnapshotState(int64) error   { return nil }
func (s *idleSource) Close(context.Context) error { return nil }

// countSink counts what it receives.
type countSink struct{ n *atomic.Int64 }

func (s countSink) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (s countSink) Write(_ context.Context, b []string) error {
	s.n.Add(int64(len(b)))
	return nil
}
func (s countSink) Flush(context.Context) error { return nil }
func (s countSink) Close(context.Context) error { return nil }

// TestIdleness: a source subtask that reads nothing holds event time back
// until WithIdleness lets the others' watermarks through.
func TestIdleness(t *testing.T) {
	for _, idle := range []bool{false, true} {
		t.Run(fmt.Sprintf("idleness=%v", idle), func(t *testing.T) {
			env, log := newEnv(testConfig(t, 2, "0", "pipeline.auto-watermark-interval", "20ms"))
			ws := weir.ForMonotonousTimestamps[tsEvent]().WithTimestampAssigner(func(e tsEvent, _ int64) int64 { return e.TS })
			if idle {
				ws = ws.WithIdleness(50 * time.Millisecond)
			}
			src := weir.FromSourceWithWatermarks(env, func() weir.Source[tsEvent] { return &idleSource{} }, ws)
			w := weir.Window(weir.KeyBy(src, func(e tsEvent) int64 { return e.K }), weir.TumblingEventTimeWindows(100*time.Millisecond))
			fired := &atomic.Int64{}
			weir.SinkTo(weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, string] { return countLines{} }),
				func() weir.Sink[string] { return countSink{fired} })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			job, err := env.Start(ctx, "idle")
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(3 * time.Second)
			if !idle {
				deadline = time.Now().Add(time.Second)
			}
			for time.Now().Before(deadline) && fired.Load() == 0 {
				time.Sleep(10 * time.Millisecond)
			}
			job.Cancel()
			job.Wait()
			if idle && fired.Load() == 0 {
				t.Fatalf("with idleness no window fired in 3 s: the idle subtask held event time back\n%s", log)
			}
			if !idle && fired.Load() != 0 {
				t.Fatalf("without idleness %d windows fired although subtask 1 never sent a watermark", fired.Load())
			}
		})
	}
}
