package weir_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
)

// tsEvent is an event of key K at event time TS.
type tsEvent struct {
	I, K, TS int64
}

// tsEvents is a bounded source of n events over k keys whose times are
// i*10 minus a disorder of at most 30 ms, with watermarks bounded by 30 ms.
func tsEvents(env *weir.Env, n, k int64) weir.Stream[tsEvent] {
	gen := func(i int64) tsEvent { return tsEvent{I: i, K: i % k, TS: i*10 + 30 - (i*7)%31} }
	ws := weir.ForBoundedOutOfOrderness[tsEvent](30 * time.Millisecond).
		WithTimestampAssigner(func(e tsEvent, _ int64) int64 { return e.TS })
	return weir.FromSourceWithWatermarks(env, datagen.New(gen, datagen.WithCount(n)), ws).Name("events").UID("events")
}

// timerFn registers an event-time timer 100 ms after each record and, when
// it fires, emits the key, the timer's time, its domain and the
// timestamp the context gives, and the watermark at that moment is at
// least the timer's time.
type timerFn struct{}

func (timerFn) Open(context.Context, *weir.KeyedContext[int64]) error { return nil }

func (timerFn) ProcessElement(e tsEvent, kc *weir.KeyedContext[int64], _ *weir.Collector[string]) error {
	ts, ok := kc.Timestamp()
	if !ok || ts != e.TS {
		return fmt.Errorf("record %d: Timestamp() = %d, %v; want %d", e.I, ts, ok, e.TS)
	}
	kc.RegisterEventTimeTimer(e.TS + 100)
	return nil
}

func (timerFn) OnTimer(at int64, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	ts, _ := kc.Timestamp()
	if wm := kc.CurrentWatermark(); wm < at {
		return fmt.Errorf("timer %d fired at watermark %d", at, wm)
	}
	out.Collect(fmt.Sprintf("%d,%d,%v,%d", kc.CurrentKey(), at, kc.TimeDomain(), ts))
	return nil
}

// TestEventTimeTimers: event-time timers fire once per (key, time), with
// the time domain and the timer's timestamp, at or after the watermark
// passes them; the end of the bounded input fires the rest.
func TestEventTimeTimers(t *testing.T) {
	for _, backend := range []string{"heap", "lsm"} {
		t.Run(backend, func(t *testing.T) {
			env, log := newEnv(testConfig(t, 2, "50ms", "state.backend.type", backend))
			const n, k = 3000, 7
			keyed := weir.KeyBy(tsEvents(env, n, k), func(e tsEvent) int64 { return e.K })
			out := sinkLines(t, weir.Process(keyed, func() weir.KeyedProcessFunction[int64, tsEvent, string] { return timerFn{} }).UID("timers"))
			execute(t, env, log)
			seen := map[string]bool{}
			var want []string
			for i := int64(0); i < n; i++ {
				ts := i*10 + 30 - (i*7)%31
				l := fmt.Sprintf("%d,%d,event time,%d", i%k, ts+100, ts+100)
				if !seen[l] {
					seen[l] = true
					want = append(want, l)
				}
			}
			sameMultiset(t, want, committed(t, out))
		})
	}
}

// windowLines formats window results as "key,start,end,value".
type windowLines struct{}

func (windowLines) Process(key int64, wc *weir.WindowContext, vs []int64, out *weir.Collector[string]) error {
	for _, v := range vs {
		out.Collect(fmt.Sprintf("%d,%d,%d,%d", key, wc.Window().Start, wc.Window().End, v))
	}
	return nil
}

type countAgg struct{}

func (countAgg) CreateAccumulator() int64     { return 0 }
func (countAgg) Add(_ tsEvent, a int64) int64 { return a + 1 }
func (countAgg) Result(a int64) int64         { return a }
func (countAgg) Merge(a, b int64) int64       { return a + b }

// TestWindowFunctions: reduce, aggregate, process and aggregate+process
// over the same tumbling windows agree with a naive count.
func TestWindowFunctions(t *testing.T) {
	const n, k, size = 2000, 5, 200
	want := map[string]int64{}
	for i := int64(0); i < n; i++ {
		ts := i*10 + 30 - (i*7)%31
		start := ts - ts%size
		want[fmt.Sprintf("%d,%d,%d", i%k, start, start+size)]++
	}
	var wantLines []string
	for w, c := range want {
		wantLines = append(wantLines, fmt.Sprintf("%s,%d", w, c))
	}
	build := map[string]func(w weir.WindowedStream[int64, tsEvent]) weir.Stream[string]{
		"process": func(w weir.WindowedStream[int64, tsEvent]) weir.Stream[string] {
			return weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, string] { return countLines{} })
		},
		"aggregate+process": func(w weir.WindowedStream[int64, tsEvent]) weir.Stream[string] {
			return weir.AggregateProcessWindow(w, weir.AggregateFunction[tsEvent, int64, int64](countAgg{}),
				func() weir.ProcessWindowFunction[int64, int64, string] { return windowLines{} })
		},
	}
	for name, b := range build {
		t.Run(name, func(t *testing.T) {
			env, log := newEnv(testConfig(t, 2, "50ms"))
			keyed := weir.KeyBy(tsEvents(env, n, k), func(e tsEvent) int64 { return e.K })
			out := sinkLines(t, b(weir.Window(keyed, weir.TumblingEventTimeWindows(size*time.Millisecond))).UID("w"))
			execute(t, env, log)
			sameMultiset(t, wantLines, committed(t, out))
		})
	}
}

// countLines counts a window's elements.
type countLines struct{}

func (countLines) Process(key int64, wc *weir.WindowContext, es []tsEvent, out *weir.Collector[string]) error {
	out.Collect(fmt.Sprintf("%d,%d,%d,%d", key, wc.Window().Start, wc.Window().End, len(es)))
	return nil
}

// TestReduceWindowTimestamps: window results carry the window's
// MaxTimestamp, which a downstream KeyedProcess sees.
func TestReduceWindowTimestamps(t *testing.T) {
	env, log := newEnv(testConfig(t, 1, "50ms"))
	const n, size = 1000, 100
	keyed := weir.KeyBy(tsEvents(env, n, 1), func(e tsEvent) int64 { return e.K })
	sums := weir.ReduceWindow(weir.Window(keyed, weir.TumblingEventTimeWindows(size*time.Millisecond)),
		func(a, b tsEvent) tsEvent { return tsEvent{I: a.I + b.I, K: a.K} })
	stamped := weir.Process(weir.KeyBy(sums, func(e tsEvent) int64 { return e.K }), func() weir.KeyedProcessFunction[int64, tsEvent, string] {
		return stampFn{}
	})
	out := sinkLines(t, stamped.UID("stamps"))
	execute(t, env, log)
	// One result per window, carrying the window's MaxTimestamp.
	seen := map[int64]bool{}
	var want []string
	for i := int64(0); i < n; i++ {
		ts := i*10 + 30 - (i*7)%31
		if end := ts - ts%size + size; !seen[end] {
			seen[end] = true
			want = append(want, fmt.Sprint(end-1))
		}
	}
	sameMultiset(t, want, committed(t, out))
}

type stampFn struct{}

func (stampFn) Open(context.Context, *weir.KeyedContext[int64]) error { return nil }
func (stampFn) ProcessElement(e tsEvent, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	ts, ok := kc.Timestamp()
	if !ok {
		return errors.New("a window result without a timestamp")
	}
	out.Collect(fmt.Sprint(ts))
	return nil
}

// TestSideOutputs: CollectSide from Process and FlatMap reaches the
// SideOutput stream, apart from the main output; a side output of an
// operator without them, a tag without an id and one id read as two
// types fail the build.
func TestSideOutputs(t *testing.T) {
	env, log := newEnv(testConfig(t, 2, "50ms"))
	odd := weir.NewOutputTag[int64]("odd")
	tagged := weir.NewOutputTag[string]("tagged")
	events := tsEvents(env, 1000, 3)
	main := weir.FlatMap(events, func(e tsEvent, out *weir.Collector[int64]) error {
		if e.I%2 == 1 {
			weir.CollectSide(out, odd, e.I)
			return nil
		}
		out.Collect(e.I)
		return nil
	})
	keyed := weir.KeyBy(main, func(i int64) int64 { return i % 3 })
	proc := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, string] { return sideFn{tag: tagged} })
	sinkAs := func(s weir.Stream[string], uid string) string {
		dir := filepath.Join(t.TempDir(), uid)
		weir.SinkToTransactional(s, file.ExactlyOnce(dir, func(v string, dst []byte) []byte { return append(dst, v...) })).UID(uid)
		return dir
	}
	evens := sinkAs(proc.UID("p"), "evens")
	odds := sinkAs(weir.Map(weir.SideOutput(main, odd), func(i int64) string { return fmt.Sprint(i) }).UID("odd-lines"), "odds")
	tags := sinkAs(weir.SideOutput(proc, tagged).UID("tagged"), "tags")
	execute(t, env, log)
	var wantEven, wantOdd, wantTags []string
	for i := 0; i < 1000; i++ {
		if i%2 == 1 {
			wantOdd = append(wantOdd, fmt.Sprint(i))
			continue
		}
		wantEven = append(wantEven, fmt.Sprint(i))
		wantTags = append(wantTags, fmt.Sprintf("side %d", i))
	}
	sameMultiset(t, wantEven, committed(t, evens))
	sameMultiset(t, wantOdd, committed(t, odds))
	sameMultiset(t, wantTags, committed(t, tags))
}

type sideFn struct{ tag weir.OutputTag[string] }

func (sideFn) Open(context.Context, *weir.KeyedContext[int64]) error { return nil }
func (f sideFn) ProcessElement(i int64, _ *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	out.Collect(fmt.Sprint(i))
	weir.CollectSide(out, f.tag, fmt.Sprintf("side %d", i))
	return nil
}

// TestEventTimeBadInput: what cannot work fails when the job is built,
// naming the operator and the fix.
func TestEventTimeBadInput(t *testing.T) {
	untimed := func(env *weir.Env) weir.Stream[tsEvent] {
		return weir.FromSource(env, datagen.New(func(i int64) tsEvent { return tsEvent{I: i} }, datagen.WithCount(10)))
	}
	sink := func(s weir.Stream[string]) { weir.SinkTo(s, func() weir.Sink[string] { return &discardLines{} }) }
	cases := []struct {
		name  string
		build func(env *weir.Env)
		want  []string
	}{
		{"event-time window on untimed stream", func(env *weir.Env) {
			w := weir.Window(weir.KeyBy(untimed(env), func(e tsEvent) int64 { return e.K }), weir.TumblingEventTimeWindows(time.Second))
			sink(weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, string] { return countLines{} }))
		}, []string{"no timestamps", "WatermarkStrategy"}},
		{"negative window size", func(env *weir.Env) {
			w := weir.Window(weir.KeyBy(tsEvents(env, 10, 1), func(e tsEvent) int64 { return e.K }), weir.TumblingEventTimeWindows(-time.Second))
			sink(weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, string] { return countLines{} }))
		}, []string{"TumblingEventTimeWindows", "-1000"}},
		{"slide of a fraction of a millisecond", func(env *weir.Env) {
			w := weir.Window(weir.KeyBy(tsEvents(env, 10, 1), func(e tsEvent) int64 { return e.K }), weir.SlidingEventTimeWindows(time.Second, 1500*time.Microsecond))
			sink(weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, string] { return countLines{} }))
		}, []string{"millisecond"}},
		{"global window without a count trigger", func(env *weir.Env) {
			w := weir.Window(weir.KeyBy(tsEvents(env, 10, 1), func(e tsEvent) int64 { return e.K }), weir.GlobalWindows())
			sink(weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, string] { return countLines{} }))
		}, []string{"global", "count"}},
		{"zero watermark strategy", func(env *weir.Env) {
			sink(weir.Map(weir.FromSourceWithWatermarks(env, datagen.New(func(i int64) tsEvent { return tsEvent{} }, datagen.WithCount(1)), weir.WatermarkStrategy[tsEvent]{}), func(tsEvent) string { return "" }))
		}, []string{"zero value", "ForBoundedOutOfOrderness"}},
		{"source strategy without assigner", func(env *weir.Env) {
			sink(weir.Map(weir.FromSourceWithWatermarks(env, datagen.New(func(i int64) tsEvent { return tsEvent{} }, datagen.WithCount(1)), weir.ForMonotonousTimestamps[tsEvent]()), func(tsEvent) string { return "" }))
		}, []string{"WithTimestampAssigner"}},
		{"side output of a map", func(env *weir.Env) {
			sink(weir.SideOutput(weir.Map(untimed(env), func(e tsEvent) int64 { return e.I }), weir.NewOutputTag[string]("x")))
		}, []string{"no side outputs", "Process"}},
		{"side output tag without id", func(env *weir.Env) {
			sink(weir.SideOutput(weir.FlatMap(untimed(env), func(tsEvent, *weir.Collector[int64]) error { return nil }), weir.OutputTag[string]{}))
		}, []string{"no id", "NewOutputTag"}},
		{"late tag without id", func(env *weir.Env) {
			w := weir.Window(weir.KeyBy(tsEvents(env, 10, 1), func(e tsEvent) int64 { return e.K }), weir.TumblingEventTimeWindows(time.Second)).SideOutputLateData(weir.OutputTag[tsEvent]{})
			sink(weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, string] { return countLines{} }))
		}, []string{"SideOutputLateData", "no id"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, _ := newEnv(testConfig(t, 1, "0"))
			c.build(env)
			err := env.Execute(context.Background(), "bad")
			if err == nil {
				t.Fatal("Execute succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

type discardLines struct{}

func (*discardLines) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (*discardLines) Write(context.Context, []string) error            { return nil }
func (*discardLines) Flush(context.Context) error                      { return nil }
func (*discardLines) Close(context.Context) error                      { return nil }
