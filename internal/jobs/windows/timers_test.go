package windows_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/windows"
)

// The timers job: the windows job's events, keyed by account, into a
// KeyedProcessFunction that keeps, per account, the count and sum of the
// events due at each time ts+timerDelay in a MapState and registers an
// event-time timer there; the timer writes "account,t,count,sum" and
// clears its entry. Besides, each account keeps one "decoy" timer at its
// largest event time + decoyDelay, moving it (delete, register) whenever
// a larger event time comes: only the last survives and fires at the end
// of the input, writing "account,decoy,t". A timer whose entry is missing
// writes an "orphan" line: a deleted timer restored, or a timer fired
// twice. With O >= M no event is late, so the output is a pure function
// of the events (timersExpected).
const (
	timerDelay = 100
	decoyDelay = 1_000_000 // beyond every event time of the tests
)

type timerFn struct {
	due   weir.MapState[int64, [2]int64] // timer time -> count, sum
	decoy weir.ValueState[int64]
}

func (f *timerFn) Open(_ context.Context, kc *weir.KeyedContext[int64]) error {
	var err error
	if f.due, err = weir.GetMapState[int64, [2]int64](kc, "due"); err != nil {
		return err
	}
	f.decoy, err = weir.GetValueState[int64](kc, "decoy")
	return err
}

func (f *timerFn) ProcessElement(e windows.Event, kc *weir.KeyedContext[int64], _ *weir.Collector[string]) error {
	ts, ok := kc.Timestamp()
	if !ok || ts != e.TS {
		return fmt.Errorf("event %d: timestamp %d (%v), want %d", e.I, ts, ok, e.TS)
	}
	t := ts + timerDelay
	a, _ := f.due.Get(t)
	f.due.Put(t, [2]int64{a[0] + 1, a[1] + e.Amount})
	kc.RegisterEventTimeTimer(t)
	d := ts + decoyDelay
	if old, ok := f.decoy.Value(); !ok || d > old {
		if ok {
			kc.DeleteEventTimeTimer(old)
		}
		kc.RegisterEventTimeTimer(d)
		f.decoy.Update(d)
	}
	return nil
}

func (f *timerFn) OnTimer(t int64, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	if kc.TimeDomain() != weir.EventTime {
		return fmt.Errorf("timer at %d: domain %v, want event time", t, kc.TimeDomain())
	}
	if ts, _ := kc.Timestamp(); ts != t {
		return fmt.Errorf("timer at %d: Timestamp() = %d", t, ts)
	}
	if a, ok := f.due.Get(t); ok {
		out.Collect(fmt.Sprintf("%d,%d,%d,%d", kc.CurrentKey(), t, a[0], a[1]))
		f.due.Remove(t)
		return nil
	}
	if d, ok := f.decoy.Value(); ok && d == t {
		out.Collect(fmt.Sprintf("%d,decoy,%d", kc.CurrentKey(), t))
		f.decoy.Clear()
		return nil
	}
	out.Collect(fmt.Sprintf("%d,orphan,%d", kc.CurrentKey(), t))
	return nil
}

// buildTimers adds the timers job to env, its lines to o.Out (and an empty
// late/ folder, so that the helpers read both folders alike).
func buildTimers(env *weir.Env, o windows.Options) {
	gen := func(i int64) windows.Event { return windows.EventAt(i, o) }
	strategy := weir.ForBoundedOutOfOrderness[windows.Event](time.Duration(o.OutOfOrderness) * time.Millisecond).
		WithTimestampAssigner(func(e windows.Event, _ int64) int64 { return e.TS })
	events := weir.FromSourceWithWatermarks(env, datagen.New(gen, datagen.WithCount(o.Events), datagen.WithRate(o.Rate)), strategy).
		Name("events").UID("events")
	lines := weir.Process(weir.KeyBy(events, func(e windows.Event) int64 { return e.Account }),
		func() weir.KeyedProcessFunction[int64, windows.Event, string] { return &timerFn{} }).Name("timers").UID("timers")
	text := func(v string, dst []byte) []byte { return append(dst, v...) }
	weir.SinkToTransactional(lines, file.ExactlyOnce(o.Out, text)).Name("files").UID("files")
}

// timersExpected is the timers job's output computed without the engine.
func timersExpected(o windows.Options) []string {
	type k struct{ account, t int64 }
	due := map[k][2]int64{}
	decoy := map[int64]int64{}
	for i := int64(0); i < o.Events; i++ {
		e := windows.EventAt(i, o)
		a := due[k{e.Account, e.TS + timerDelay}]
		due[k{e.Account, e.TS + timerDelay}] = [2]int64{a[0] + 1, a[1] + e.Amount}
		decoy[e.Account] = max(decoy[e.Account], e.TS+decoyDelay)
	}
	var out []string
	for key, a := range due {
		out = append(out, fmt.Sprintf("%d,%d,%d,%d", key.account, key.t, a[0], a[1]))
	}
	for account, t := range decoy {
		out = append(out, fmt.Sprintf("%d,decoy,%d", account, t))
	}
	sort.Strings(out)
	return out
}

// diff names the first differences between two multisets of lines.
func diff(want, got []string) string {
	counts := map[string]int{}
	for _, l := range want {
		counts[l]++
	}
	for _, l := range got {
		counts[l]--
	}
	var missing, extra []string
	for l, c := range counts {
		switch {
		case c > 0:
			missing = append(missing, fmt.Sprintf("%q x%d", l, c))
		case c < 0:
			extra = append(extra, fmt.Sprintf("%q x%d", l, -c))
		}
	}
	if len(missing)+len(extra) == 0 {
		return ""
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return fmt.Sprintf("want %d lines, got %d; missing %d: %s; extra %d: %s", len(want), len(got),
		len(missing), strings.Join(missing[:min(5, len(missing))], ", "), len(extra), strings.Join(extra[:min(5, len(extra))], ", "))
}

func timerOptions(n int64) windows.Options {
	o := windows.Options{Events: n, Keys: 23, Window: windows.Spec{Kind: "tumble", Size: 1}, MaxDisorder: 40, OutOfOrderness: -1}
	o.Defaults()
	return o
}

// TestKeyedProcessEventTimersUnderFaults runs the timers job with failures
// at every fault point, heap and lsm, at parallelism 1 to 3: event-time
// timers and their MapState are checkpointed and restored together, a
// deleted timer stays deleted, and every timer's line is committed exactly
// once.
func TestKeyedProcessEventTimersUnderFaults(t *testing.T) {
	const n = 3000
	o := timerOptions(n)
	if want := timersExpected(o); len(want) < 1000 {
		t.Fatalf("the closed form has only %d lines", len(want))
	}
	cases := []struct {
		backend string
		p       int
	}{{"heap", 1}, {"heap", 2}, {"heap", 3}, {"lsm", 2}}
	if *long {
		cases = append(cases, struct {
			backend string
			p       int
		}{"lsm", 1}, struct {
			backend string
			p       int
		}{"lsm", 3})
	}
	fromCheckpoint := 0
	defer func() {
		if !t.Failed() && fromCheckpoint == 0 {
			t.Errorf("no restart restored a checkpoint: the timers were never restored")
		}
	}()
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s/p%d", c.backend, c.p), func(t *testing.T) {
			o := o
			o.Rate = rateFor(c.backend)
			r := newFRun(t, o, c.p, c.backend)
			r.build = buildTimers
			r.plan = faultPlan(failuresPerRun, int64(31*i+c.p), n, faults.AllPoints()...)
			res := r.execute(t, context.Background(), nil)
			checkFailures(t, res, failuresPerRun)
			if d := diff(timersExpected(r.o), res.lines); d != "" {
				t.Fatalf("committed timer output differs from the closed form: %s\nfired: %v", d, res.inj.Log())
			}
			fromCheckpoint += res.restored
			t.Logf("exact: %s; fired %v", res.summary(), res.inj.Log())
		})
	}
}
