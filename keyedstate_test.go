package weir_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
)

// event is one input record of the state test.
type event struct{ I, Key int64 }

// allStates uses every keyed state kind and a processing-time timer. Per
// record it emits "rec,i,key,count,last3,buckets,sum":
//   - count (ValueState): records of the key so far;
//   - last3 (ListState): the key's last three indexes, oldest first;
//   - buckets (MapState): the key's record count per i mod 3 bucket;
//   - sum (ReducingState): the sum of the key's indexes.
//
// On a key's first record it registers a timer delay ms ahead, whose
// firing emits "timer,key": its content does not depend on when it fires,
// so a failure-free run and a run with failures emit the same lines. The
// record with index last registers a second timer an hour ahead, which
// would emit a second "timer,key": it must never fire, because a bounded
// job drops the timers still pending when its input ends.
type allStates struct {
	last    int64
	delay   int64         // ms
	fired   *atomic.Int64 // counts OnTimer calls
	count   weir.ValueState[int64]
	recent  weir.ListState[int64]
	buckets weir.MapState[int64, int64]
	sum     weir.ReducingState[int64]
}

func (a *allStates) Open(ctx context.Context, kc *weir.KeyedContext[int64]) (err error) {
	if a.count, err = weir.GetValueState[int64](kc, "count"); err != nil {
		return err
	}
	if a.recent, err = weir.GetListState[int64](kc, "recent"); err != nil {
		return err
	}
	if a.buckets, err = weir.GetMapState[int64, int64](kc, "buckets"); err != nil {
		return err
	}
	a.sum, err = weir.GetReducingState(kc, "sum", func(x, y int64) int64 { return x + y })
	return err
}

func (a *allStates) ProcessElement(e event, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	c, _ := a.count.Value()
	c++
	a.count.Update(c)
	if c == 1 {
		kc.RegisterProcessingTimeTimer(kc.CurrentProcessingTime() + a.delay)
	}
	if e.I == a.last {
		kc.RegisterProcessingTimeTimer(kc.CurrentProcessingTime() + time.Hour.Milliseconds())
	}
	recent := append(a.recent.Get(), e.I)
	if len(recent) > 3 {
		recent = recent[len(recent)-3:]
	}
	a.recent.Update(recent)
	b, _ := a.buckets.Get(e.I % 3)
	a.buckets.Put(e.I%3, b+1)
	a.sum.Add(e.I)
	s, _ := a.sum.Get()
	out.Collect(fmt.Sprintf("rec,%d,%d,%d,%s,%s,%d", e.I, e.Key, c, joinInts(recent), bucketString(a.buckets), s))
	return nil
}

func (a *allStates) OnTimer(ts int64, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	if now := kc.CurrentProcessingTime(); ts > now {
		return fmt.Errorf("timer %d fired early, at %d", ts, now)
	}
	a.fired.Add(1)
	out.Collect(fmt.Sprintf("timer,%d", kc.CurrentKey()))
	return nil
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}

func bucketString(m weir.MapState[int64, int64]) string {
	var parts []string
	for k, v := range m.All() {
		parts = append(parts, fmt.Sprintf("%d:%d", k, v))
	}
	slices.Sort(parts) // map iteration order is not defined
	return strings.Join(parts, " ")
}

// expectedAllStates computes allStates' output for n records over k keys
// directly: every key's timer fires once, the late timer never.
func expectedAllStates(n, k int64) []string {
	count := map[int64]int64{}
	recent := map[int64][]int64{}
	buckets := map[int64]map[int64]int64{}
	sum := map[int64]int64{}
	var out []string
	for i := int64(0); i < n; i++ {
		key := i % k
		count[key]++
		recent[key] = append(recent[key], i)
		if len(recent[key]) > 3 {
			recent[key] = recent[key][1:]
		}
		if buckets[key] == nil {
			buckets[key] = map[int64]int64{}
		}
		buckets[key][i%3]++
		sum[key] += i
		var parts []string
		for b, c := range buckets[key] {
			parts = append(parts, fmt.Sprintf("%d:%d", b, c))
		}
		slices.Sort(parts)
		out = append(out, fmt.Sprintf("rec,%d,%d,%d,%s,%s,%d", i, key, count[key], joinInts(recent[key]), strings.Join(parts, " "), sum[key]))
	}
	for key := int64(0); key < min(k, n); key++ {
		out = append(out, fmt.Sprintf("timer,%d", key))
	}
	return out
}

// TestKeyedStateKindsAndTimers runs allStates with and without injected
// failures at parallelism 1 and 3: each run's output must equal the
// closed-form output exactly (and so equal each other). The source is
// rate-limited so that the job runs well past the 5 ms timers; the hour
// timer is still pending at the end of the input and is dropped: Execute
// returns without waiting for it and no "late" line appears.
func TestKeyedStateKindsAndTimers(t *testing.T) {
	const n, k = 6_000, 17
	want := expectedAllStates(n, k)
	for _, failures := range []int{0, 3} {
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("failures%d/p%d", failures, p), func(t *testing.T) {
				env, log := newEnv(testConfig(t, p, "10ms"))
				var inj *faults.Injector
				if failures > 0 {
					inj = injector(env, failures, int64(p), n, faults.AllPoints()...)
				}
				owner := func(i int64, p int) int { return int(i % k % int64(p)) }
				gen := func(i int64) event { return event{I: i, Key: i % k} }
				src := weir.FromSource(env, datagen.New(gen, datagen.WithCount(n), datagen.WithRate(60_000), datagen.WithOwner(owner))).UID("src")
				keyed := weir.KeyBy(src, func(e event) int64 { return e.Key })
				lines := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, event, string] {
					return &allStates{last: n - 1, delay: 5, fired: new(atomic.Int64)}
				}).UID("states")
				out := sinkLines(t, lines)
				start := time.Now()
				execute(t, env, log)
				if inj != nil && inj.Fired() != failures {
					t.Errorf("%d of %d failures fired", inj.Fired(), failures)
				}
				sameMultiset(t, want, committed(t, out))
				t.Logf("exact in %v with %d restarts, %d checkpoints", time.Since(start), hooks.Plan(env).Status.Restarts.Load(), hooks.Plan(env).Status.CompletedCheckpoints.Load())
			})
		}
	}
}

// TestTimersSurviveRestore: a run is cancelled once two checkpoints
// completed, while every key's timer (300 ms ahead) is still pending; a
// second run on the same state folder restores the timers from the
// checkpoint and fires them, and the output over both runs is exact. Keys
// never register a timer twice (their count is restored too), so firings
// in the second run can only come from restored timers.
func TestTimersSurviveRestore(t *testing.T) {
	const n, k, delay = 6_000, 17, 300
	cfg := testConfig(t, 2, "10ms")
	outDir := t.TempDir()
	build := func(fired *atomic.Int64, rate float64) (*weir.Env, *syncBuffer, string) {
		env, log := newEnv(cfg)
		owner := func(i int64, p int) int { return int(i % k % int64(p)) }
		gen := func(i int64) event { return event{I: i, Key: i % k} }
		src := weir.FromSource(env, datagen.New(gen, datagen.WithCount(n), datagen.WithRate(rate), datagen.WithOwner(owner))).UID("src")
		lines := weir.Process(weir.KeyBy(src, func(e event) int64 { return e.Key }), func() weir.KeyedProcessFunction[int64, event, string] {
			return &allStates{last: n - 1, delay: delay, fired: fired}
		}).UID("states")
		weir.SinkToTransactional(lines, file.ExactlyOnce(outDir, func(v string, dst []byte) []byte { return append(dst, v...) })).UID("out")
		return env, log, outDir
	}
	var fired1, fired2 atomic.Int64
	env1, log1, _ := build(&fired1, 10_000)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- env1.Execute(ctx, "test") }()
	waitUntil(t, done, func() bool { return hooks.Plan(env1).Status.CompletedCheckpoints.Load() >= 2 }, log1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: Execute = %v, want context.Canceled", err)
	}
	cancelledAfter := time.Since(start)

	env2, log2, out := build(&fired2, 20_000)
	execute(t, env2, log2)
	if !strings.Contains(log2.String(), "msg=restoring") {
		t.Fatalf("the second run did not restore a checkpoint:\n%s", log2)
	}
	sameMultiset(t, expectedAllStates(n, k), committed(t, out))
	if fired1.Load() == 0 && fired2.Load() < k {
		t.Errorf("no timer fired before the cancel, and only %d of %d fired after the restore: timers were not restored", fired2.Load(), k)
	}
	t.Logf("cancelled after %v; timers fired: %d in the first run, %d in the second (restored)", cancelledAfter, fired1.Load(), fired2.Load())
}

// writesInOpen writes its state in Open, where no key is current.
type writesInOpen struct {
	total weir.ValueState[int64]
}

func (w *writesInOpen) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	if w.total, err = weir.GetValueState[int64](kc, "total"); err != nil {
		return err
	}
	w.total.Update(0) // no key: refused
	return nil
}

func (w *writesInOpen) ProcessElement(v int64, _ *weir.KeyedContext[int64], out *weir.Collector[int64]) error {
	t, _ := w.total.Value()
	w.total.Update(t + v)
	out.Collect(t + v)
	return nil
}

// TestStateWriteInOpenFails: a keyed state written in Open, where no key
// is current, fails the job at once (a restart would meet it again), with
// an error naming the operator and the state and saying where keyed state
// can be used, on both backends; before, the write landed under the zero
// key.
func TestStateWriteInOpenFails(t *testing.T) {
	for _, backend := range []string{weir.HeapStateBackend, weir.LSMStateBackend} {
		t.Run(backend, func(t *testing.T) {
			env, log := newEnv(testConfig(t, 1, "0", weir.StateBackendType, backend))
			src := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithCount(10)))
			keyed := weir.KeyBy(src, func(v int64) int64 { return v % 3 })
			sums := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, int64] { return &writesInOpen{} }).UID("sums")
			weir.SinkTo(sums, func() weir.Sink[int64] { return discard{} })
			job, err := env.Start(t.Context(), "open-write")
			if err != nil {
				t.Fatal(err)
			}
			err = job.Wait()
			var jf *weir.JobFailedError
			if !errors.As(err, &jf) {
				t.Fatalf("Wait = %v, want a JobFailedError\nlog:\n%s", err, log)
			}
			for _, want := range []string{`operator "sums"`, `state "total"`, "no current key", "not in Open"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if jf.Restarts != 0 || job.Stats().Restarts != 0 {
				t.Errorf("%d restarts, want 0: a restart cannot fix the function", jf.Restarts)
			}
		})
	}
}
