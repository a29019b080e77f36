package weir_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
)

// jitter is a deterministic call latency of up to 2 ms per record, so
// that calls complete out of input order.
func jitter(i int64) time.Duration { return time.Duration((i*7919)%5) * 500 * time.Microsecond }

// sleepOrDone waits d unless ctx ends first.
func sleepOrDone(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// keyLedger records the idempotency key of every call and fails the test
// when one key is used for two different records: re-issued and replayed
// calls must be recognisable to a deduplicating service.
type keyLedger struct {
	mu   sync.Mutex
	keys map[string]int64
	bad  []string
}

func (l *keyLedger) note(key string, i int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = map[string]int64{}
	}
	if old, ok := l.keys[key]; ok && old != i {
		l.bad = append(l.bad, fmt.Sprintf("%s: record %d and %d", key, old, i))
	}
	l.keys[key] = i
}

// TestAsyncMapExactUnderFailures: AsyncMap in each order, with calls that
// complete out of order, under injected failures at every point: the
// committed output is exactly one result per record, and an idempotency
// key never names two records.
func TestAsyncMapExactUnderFailures(t *testing.T) {
	const n = 4_000
	for _, mode := range []string{"ordered", "unordered"} {
		for _, failures := range []int{0, 3} {
			for _, p := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/failures%d/p%d", mode, failures, p), func(t *testing.T) {
					env, log := newEnv(testConfig(t, p, "10ms"))
					var inj *faults.Injector
					if failures > 0 {
						inj = injector(env, failures, int64(p)+7, n, faults.AllPoints()...)
					}
					var ledger keyLedger
					var calls atomic.Int64
					src := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithCount(n), datagen.WithRate(40_000))).UID("src")
					opts := []weir.AsyncOption{weir.WithAsyncCapacity(16)}
					if mode == "unordered" {
						opts = append(opts, weir.WithAsyncUnordered())
					}
					out := weir.AsyncMap(src, func(ctx context.Context, i int64, c weir.AsyncCall) (string, error) {
						calls.Add(1)
						ledger.note(c.IdempotencyKey, i)
						if err := sleepOrDone(ctx, jitter(i)); err != nil {
							return "", err
						}
						return fmt.Sprintf("r%d", i), nil
					}, opts...).UID("async")
					dir := sinkLines(t, out)
					execute(t, env, log)
					if inj != nil && inj.Fired() != failures {
						t.Errorf("%d of %d failures fired", inj.Fired(), failures)
					}
					want := make([]string, n)
					for i := range want {
						want[i] = fmt.Sprintf("r%d", i)
					}
					sameMultiset(t, want, committed(t, dir))
					if len(ledger.bad) > 0 {
						t.Errorf("idempotency keys reused for different records: %v", ledger.bad[:min(5, len(ledger.bad))])
					}
					t.Logf("%d calls for %d records, %d restarts", calls.Load(), n, hooks.Plan(env).Status.Restarts.Load())
				})
			}
		}
	}
}

// TestAsyncMapOrder: ordered mode emits in input order per subtask
// although calls complete out of order; AsyncMapKeyed per key.
func TestAsyncMapOrder(t *testing.T) {
	const n, p, k = 3_000, 2, 5
	check := func(t *testing.T, name string, order func(weir.Stream[int64]) weir.Stream[int64], group func(int64) int64) {
		t.Run(name, func(t *testing.T) {
			env, log := newEnv(testConfig(t, p, "0"))
			src := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithCount(n),
				datagen.WithOwner(func(i int64, p int) int { return int(i % int64(p)) }))).UID("src")
			var mu sync.Mutex
			last := map[int64]int64{}
			var bad []string
			seen := weir.Map(order(src), func(i int64) string {
				mu.Lock()
				defer mu.Unlock()
				g := group(i)
				if l, ok := last[g]; ok && i < l {
					bad = append(bad, fmt.Sprintf("%d after %d", i, l))
				}
				last[g] = i
				return fmt.Sprint(i)
			})
			dir := sinkLines(t, seen)
			execute(t, env, log)
			if len(committed(t, dir)) != n {
				t.Fatalf("%d results for %d records", len(committed(t, dir)), n)
			}
			if len(bad) > 0 {
				t.Errorf("%d results out of order, first: %v", len(bad), bad[:min(5, len(bad))])
			}
		})
	}
	slow := func(ctx context.Context, i int64, _ weir.AsyncCall) (int64, error) {
		return i, sleepOrDone(ctx, jitter(i))
	}
	// The source's subtask s owns i%p == s, and AsyncMap chains to it.
	check(t, "ordered", func(s weir.Stream[int64]) weir.Stream[int64] {
		return weir.AsyncMap(s, slow, weir.WithAsyncCapacity(32))
	}, func(i int64) int64 { return i % p })
	check(t, "ordered-per-key", func(s weir.Stream[int64]) weir.Stream[int64] {
		return weir.AsyncMapKeyed(weir.KeyBy(s, func(i int64) int64 { return i % k }), slow, weir.WithAsyncCapacity(32))
	}, func(i int64) int64 { return i%k*p + i%p }) // per key and source subtask: the order its channel keeps
}

// TestAsyncMapWatermarksAreFences: in unordered mode no watermark
// overtakes a result before it. The last record of every event-time
// window is slow; were the watermarks after it (and the next window's
// records) to pass it, its window would fire without it and drop it as
// late. Every window must count all its records. (That no result
// overtakes a watermark either is the core's invariant, checked by
// internal/asyncqueue's random test.)
func TestAsyncMapWatermarksAreFences(t *testing.T) {
	const n, size = 2_000, 100
	env, log := newEnv(testConfig(t, 1, "20ms", config.AutoWatermarkInterval, "1 ms"))
	gen := func(i int64) tsEvent { return tsEvent{I: i, K: 0, TS: i} }
	ws := weir.ForMonotonousTimestamps[tsEvent]().WithTimestampAssigner(func(e tsEvent, _ int64) int64 { return e.TS })
	src := weir.FromSourceWithWatermarks(env, datagen.New(gen, datagen.WithCount(n), datagen.WithRate(20_000)), ws).UID("events")
	async := weir.AsyncMap(src, func(ctx context.Context, e tsEvent, _ weir.AsyncCall) (tsEvent, error) {
		d := 100 * time.Microsecond
		if e.I%size == size-1 {
			d = 20 * time.Millisecond
		}
		return e, sleepOrDone(ctx, d)
	}, weir.WithAsyncUnordered(), weir.WithAsyncCapacity(64)).UID("async")
	w := weir.Window(weir.KeyBy(async, func(e tsEvent) int64 { return e.K }), weir.TumblingEventTimeWindows(size*time.Millisecond))
	dir := sinkLines(t, weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, string] { return countLines{} }).UID("w"))
	execute(t, env, log)
	var want []string
	for s := int64(0); s < n; s += size {
		want = append(want, fmt.Sprintf("0,%d,%d,%d", s, s+size, size))
	}
	sameMultiset(t, want, committed(t, dir))
}

// TestAsyncMapRetriesAndTimeouts: failed attempts are retried with
// backoff as the policy says, the predicate decides which; a call that
// does not complete in time fails the job with ErrAsyncTimeout, unless
// the function returns a fallback once its context is done.
func TestAsyncMapRetriesAndTimeouts(t *testing.T) {
	const n = 200
	errFlaky := errors.New("flaky")
	run := func(t *testing.T, restart bool, f weir.AsyncFunc[int64, string], opts ...weir.AsyncOption) ([]string, error) {
		t.Helper()
		cfg := testConfig(t, 1, "0")
		if !restart {
			if err := cfg.Set(config.RestartStrategyType, config.RestartNone); err != nil {
				t.Fatal(err)
			}
		}
		env, _ := newEnv(cfg)
		src := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithCount(n))).UID("src")
		dir := sinkLines(t, weir.AsyncMap(src, f, opts...).UID("async"))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := env.Execute(ctx, "async"); err != nil {
			return nil, err
		}
		return committed(t, dir), nil
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("r%d", i)
	}

	t.Run("retries", func(t *testing.T) {
		var attempts, third atomic.Int64
		got, err := run(t, false, func(_ context.Context, i int64, c weir.AsyncCall) (string, error) {
			attempts.Add(1)
			if c.Attempt < 3 && i%2 == 0 {
				return "", errFlaky
			}
			if c.Attempt == 3 {
				third.Add(1)
			}
			return fmt.Sprintf("r%d", i), nil
		}, weir.WithAsyncRetry(weir.AsyncRetryPolicy{MaxAttempts: 3, Backoff: time.Millisecond, Multiplier: 2,
			RetryIf: func(err error) bool { return errors.Is(err, errFlaky) }}))
		if err != nil {
			t.Fatal(err)
		}
		sameMultiset(t, want, got)
		if attempts.Load() != n+n/2*2 || third.Load() != n/2 {
			t.Errorf("%d attempts (%d third ones), want %d (%d)", attempts.Load(), third.Load(), n+n, n/2)
		}
	})
	t.Run("predicate-declines", func(t *testing.T) {
		var attempts atomic.Int64
		_, err := run(t, false, func(_ context.Context, i int64, c weir.AsyncCall) (string, error) {
			attempts.Add(1)
			if i == 7 {
				return "", errors.New("bad request")
			}
			return fmt.Sprintf("r%d", i), nil
		}, weir.WithAsyncRetry(weir.AsyncRetryPolicy{MaxAttempts: 5, RetryIf: func(err error) bool { return errors.Is(err, errFlaky) }}))
		if err == nil || !containsAll(err.Error(), "bad request", "async/0/", "/7:", "WithAsyncRetry") {
			t.Errorf("Execute = %v, want the call's error naming its key and the fix", err)
		}
	})
	t.Run("timeout-fails", func(t *testing.T) {
		_, err := run(t, false, func(ctx context.Context, i int64, _ weir.AsyncCall) (string, error) {
			if i == 42 {
				<-ctx.Done() // a service that never answers
				return "", ctx.Err()
			}
			return fmt.Sprintf("r%d", i), nil
		}, weir.WithAsyncTimeout(50*time.Millisecond))
		if !errors.Is(err, weir.ErrAsyncTimeout) {
			t.Errorf("Execute = %v, want ErrAsyncTimeout", err)
		}
	})
	t.Run("timeout-fallback", func(t *testing.T) {
		got, err := run(t, false, func(ctx context.Context, i int64, _ weir.AsyncCall) (string, error) {
			if i == 42 {
				<-ctx.Done()
				return fmt.Sprintf("r%d", i), nil // the fallback
			}
			return fmt.Sprintf("r%d", i), nil
		}, weir.WithAsyncTimeout(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		sameMultiset(t, want, got)
	})
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestAsyncMapCapacityAndCancel: no more calls run at once than the
// capacity, which is reached; cancelling the job cancels the calls' context
// and Execute returns once they returned.
func TestAsyncMapCapacityAndCancel(t *testing.T) {
	const capacity = 8
	env, log := newEnv(testConfig(t, 1, "50ms"))
	var running, peak, returned, started atomic.Int64
	src := weir.FromSource(env, datagen.New(func(i int64) int64 { return i })).UID("src") // unbounded
	out := weir.AsyncMap(src, func(ctx context.Context, i int64, _ weir.AsyncCall) (string, error) {
		started.Add(1)
		r := running.Add(1)
		for {
			p := peak.Load()
			if r <= p || peak.CompareAndSwap(p, r) {
				break
			}
		}
		defer func() { running.Add(-1); returned.Add(1) }()
		if i >= 100 {
			<-ctx.Done() // stuck from here on: the queue fills up
			return "", ctx.Err()
		}
		return fmt.Sprint(i), sleepOrDone(ctx, time.Millisecond)
	}, weir.WithAsyncCapacity(capacity)).UID("async")
	sinkLines(t, out)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- env.Execute(ctx, "async") }()
	waitUntil(t, done, func() bool { return running.Load() == capacity }, log)
	time.Sleep(50 * time.Millisecond) // the input stays blocked: nothing more starts
	if s := started.Load(); s != 100+capacity {
		t.Errorf("%d calls started, want %d: a full queue must block the input", s, 100+capacity)
	}
	// The task's metrics report the calls in flight and their latency.
	var stats []string
	reported := false
	for _, ts := range hooks.Plan(env).Status.Tasks() {
		if a := ts.Async; a != nil {
			stats = append(stats, fmt.Sprintf("%s: %+v", ts.Name, *a))
			reported = reported || (a.InFlight == capacity && a.LatencyMean > 0)
		}
	}
	if !reported {
		t.Errorf("async metrics %v, want %d in flight and a latency", stats, capacity)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Execute = %v, want context.Canceled", err)
	}
	if peak.Load() > capacity {
		t.Errorf("%d calls at once, capacity %d", peak.Load(), capacity)
	}
	if r := running.Load(); r != 0 {
		t.Errorf("%d calls still running after Execute returned", r)
	}
}

// TestAsyncMapRescale: a job cancelled with calls in flight resumes at
// another parallelism; the in-flight records are redistributed with the
// operator's state and re-issued, the output is exact, and no idempotency
// key names two records (new records are numbered above every old one).
func TestAsyncMapRescale(t *testing.T) {
	for _, c := range []struct{ from, to int }{{3, 1}, {1, 3}} {
		t.Run(fmt.Sprintf("%d->%d", c.from, c.to), func(t *testing.T) {
			const n = 8_000
			cfg := testConfig(t, c.from, "5ms")
			out := t.TempDir()
			var ledger keyLedger
			build := func(p int, pause time.Duration) (*weir.Env, *syncBuffer) {
				if err := cfg.Set(config.ParallelismDefault, fmt.Sprint(p)); err != nil {
					t.Fatal(err)
				}
				env, log := newEnv(cfg)
				src := weir.FromSource(env, func() weir.Source[int64] {
					return &splitSource{n: n, numSplits: 12, pause: pause}
				}).UID("src")
				strs := weir.AsyncMap(src, func(ctx context.Context, v int64, call weir.AsyncCall) (string, error) {
					ledger.note(call.IdempotencyKey, v)
					return fmt.Sprint(v), sleepOrDone(ctx, jitter(v)+time.Millisecond)
				}, weir.WithAsyncCapacity(64), weir.WithAsyncUnordered()).UID("async")
				sinkInto(strs, out)
				return env, log
			}
			env1, log1 := build(c.from, 200*time.Microsecond)
			cancelAfterCheckpoints(t, env1, log1, 3)
			first := len(committed(t, out))
			env2, log2 := build(c.to, 0)
			execute(t, env2, log2)
			if !strings.Contains(log2.String(), "msg=restoring") {
				t.Fatalf("the second run did not restore:\n%s", log2)
			}
			var want []string
			for v := range int64(n) {
				want = append(want, fmt.Sprint(v))
			}
			sameMultiset(t, want, committed(t, out))
			if len(ledger.bad) > 0 {
				t.Errorf("idempotency keys reused for different records: %v", ledger.bad[:min(5, len(ledger.bad))])
			}
			t.Logf("first run committed %d lines; resumed at parallelism %d", first, c.to)
		})
	}
}
