package weir_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/hooks"
)

// sumPerKey is the pipeline of the panic tests: values i in [0, n) keyed by
// i mod k, a running sum per key, one line "i,key,sum" per value. It is
// exactly-once, so its output is a pure function of n and k.
func expectedSums(n, k int64) []string {
	sum := map[int64]int64{}
	var out []string
	for i := int64(0); i < n; i++ {
		sum[i%k] += i
		out = append(out, fmt.Sprintf("%d,%d,%d", i, i%k, sum[i%k]))
	}
	return out
}

type pair struct{ I, Sum int64 }

// TestPanicInUserFunction: a Map or a KeyedProcessFunction panics once, in the middle of the input.
// The panic fails the task, not the process; the job restarts from its
// checkpoint and its exactly-once output is exact. The failure cause that
// the job status and the log carry names the panic value and a stack.
func TestPanicInUserFunction(t *testing.T) {
	for _, where := range []string{"map", "keyed-process"} {
		t.Run(where, func(t *testing.T) {
			const n, k = 30_000, 13
			env, log := newEnv(testConfig(t, 2, "5ms"))
			var panicked atomic.Bool
			maybePanic := func(i int64) {
				if i == n/2 && panicked.CompareAndSwap(false, true) {
					panic(fmt.Sprintf("boom at %d", i))
				}
			}
			owner := func(i int64, p int) int { return int(i % k % int64(p)) }
			src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(n), datagen.WithOwner(owner))).UID("src")
			if where == "map" {
				src = weir.Map(src, func(i int64) int64 { maybePanic(i); return i })
			}
			keyed := weir.KeyBy(weir.Map(src, func(i int64) pair { return pair{I: i, Sum: i} }), func(p pair) int64 { return p.I % k })
			sums := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, pair, pair] {
				return &runningSum{before: func(p pair) {
					if where == "keyed-process" {
						maybePanic(p.I)
					}
				}}
			}).UID("sum")
			out := sinkLines(t, weir.Map(sums, func(p pair) string { return fmt.Sprintf("%d,%d,%d", p.I, p.I%k, p.Sum) }))
			execute(t, env, log)
			if !panicked.Load() {
				t.Fatal("the function never panicked")
			}
			if r := hooks.Plan(env).Status.Restarts.Load(); r != 1 {
				t.Errorf("restarts = %d, want 1", r)
			}
			cause := hooks.Plan(env).Status.LastFailure()
			for _, want := range []string{weir.ErrUserPanic.Error(), fmt.Sprintf("boom at %d", n/2), "goroutine ", "panic_test.go"} {
				if !strings.Contains(cause, want) {
					t.Errorf("failure cause does not contain %q:\n%s", want, cause)
				}
			}
			if !strings.Contains(log.String(), "boom at") {
				t.Errorf("the log does not report the panic:\n%s", log)
			}
			sameMultiset(t, expectedSums(n, k), committed(t, out))
		})
	}
}

// TestPanicWithoutRestartFailsJob: with restarts disabled the panic ends
// the job with a JobFailedError that wraps ErrUserPanic.
func TestPanicWithoutRestartFailsJob(t *testing.T) {
	env, log := newEnv(testConfig(t, 1, "0", "restart-strategy.type", "none"))
	src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(100)))
	sinkLines(t, weir.Map(src, func(i int64) string {
		if i == 42 {
			panic("no restart for me")
		}
		return fmt.Sprint(i)
	}))
	err := env.Execute(t.Context(), "test")
	var jf *weir.JobFailedError
	if !errors.As(err, &jf) || !errors.Is(err, weir.ErrUserPanic) || !strings.Contains(err.Error(), "no restart for me") {
		t.Fatalf("Execute = %v, want a JobFailedError wrapping ErrUserPanic with the panic value\nlog:\n%s", err, log)
	}
	if jf.Restarts != 0 || jf.Reason == "" || !errors.Is(jf.Cause, weir.ErrUserPanic) {
		t.Errorf("JobFailedError{Restarts: %d, Reason: %q, Cause: %v}, want no restarts, a reason and the panic as cause", jf.Restarts, jf.Reason, jf.Cause)
	}
}

// runningSum keeps a sum per key in a ValueState.
type runningSum struct {
	before func(pair)
	sum    weir.ValueState[int64]
}

func (r *runningSum) Open(ctx context.Context, kc *weir.KeyedContext[int64]) (err error) {
	r.sum, err = weir.GetValueState[int64](kc, "sum")
	return err
}

func (r *runningSum) ProcessElement(p pair, _ *weir.KeyedContext[int64], out *weir.Collector[pair]) error {
	r.before(p)
	s, _ := r.sum.Value()
	s += p.I
	r.sum.Update(s)
	out.Collect(pair{I: p.I, Sum: s})
	return nil
}
