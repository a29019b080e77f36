package weir_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
)

// TestConnectCoFlatMap: a stateless two-input operator over inputs of
// different types sees every record of both, at parallelism 1 and 2.
func TestConnectCoFlatMap(t *testing.T) {
	const n = 3000
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			env, log := newEnv(testConfig(t, p, "10ms"))
			ints := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithCount(n))).UID("ints")
			strs := weir.FromSource(env, datagen.New(func(i int64) string { return "s" + strconv.FormatInt(i, 10) }, datagen.WithCount(n/2))).UID("strs")
			lines := weir.CoFlatMap(weir.Connect(ints, strs),
				func(v int64, out *weir.Collector[string]) error {
					out.Collect("i" + strconv.FormatInt(v, 10))
					return nil
				},
				func(v string, out *weir.Collector[string]) error { out.Collect(v); return nil }).UID("co")
			out := sinkLines(t, lines)
			execute(t, env, log)
			var want []string
			for i := range n {
				want = append(want, "i"+strconv.Itoa(i))
				if i < n/2 {
					want = append(want, "s"+strconv.Itoa(i))
				}
			}
			sameMultiset(t, want, committed(t, out))
		})
	}
}

// coCount counts each key's records of both inputs in shared keyed state;
// the first record of a key sets an event-time timer that reports the
// counts when the input ends, the first of the second input a
// processing-time timer 5 ms on. State and timers must survive a restore
// for the reports to be exact.
type coCount struct{ a, b weir.ValueState[int64] }

func (c *coCount) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	if c.a, err = weir.GetValueState[int64](kc, "a"); err != nil {
		return err
	}
	c.b, err = weir.GetValueState[int64](kc, "b")
	return err
}

func (c *coCount) first(kc *weir.KeyedContext[int64]) {
	a, _ := c.a.Value()
	b, _ := c.b.Value()
	if a+b == 0 {
		kc.RegisterEventTimeTimer(1 << 50)
	}
}

func (c *coCount) ProcessElement1(_ joinRec, kc *weir.KeyedContext[int64], _ *weir.Collector[string]) error {
	c.first(kc)
	a, _ := c.a.Value()
	c.a.Update(a + 1)
	return nil
}

func (c *coCount) ProcessElement2(_ joinRec, kc *weir.KeyedContext[int64], _ *weir.Collector[string]) error {
	c.first(kc)
	b, _ := c.b.Value()
	if b == 0 {
		kc.RegisterProcessingTimeTimer(kc.CurrentProcessingTime() + 5)
	}
	c.b.Update(b + 1)
	return nil
}

func (c *coCount) OnTimer(_ int64, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	if kc.TimeDomain() == weir.ProcessingTime {
		out.Collect(fmt.Sprintf("ptimer,%d", kc.CurrentKey()))
		return nil
	}
	a, _ := c.a.Value()
	b, _ := c.b.Value()
	out.Collect(fmt.Sprintf("%d,%d,%d", kc.CurrentKey(), a, b))
	return nil
}

// TestCoProcessStateAndTimersSurviveRestore: a co-process job is cancelled
// once two checkpoints completed, and a second run on the same checkpoint
// folder, at another parallelism, restores the shared keyed state and
// both kinds of timers (redistributed by key group): the reports over
// both runs are exact.
func TestCoProcessStateAndTimersSurviveRestore(t *testing.T) {
	a := joinInput{seed: 3, side: 0, n: 6000, keys: 7, spacing: 1, disorder: 5, rate: 8000}
	b := joinInput{seed: 3, side: 1, n: 4000, keys: 7, spacing: 1, disorder: 5, rate: 6000}
	var want []string
	counts := map[int64][2]int64{}
	for _, r := range a.all() {
		c := counts[r.Key]
		c[0]++
		counts[r.Key] = c
	}
	for _, r := range b.all() {
		c := counts[r.Key]
		c[1]++
		counts[r.Key] = c
	}
	for k, c := range counts {
		want = append(want, fmt.Sprintf("%d,%d,%d", k, c[0], c[1]))
		if c[1] > 0 {
			want = append(want, fmt.Sprintf("ptimer,%d", k))
		}
	}
	cfg := testConfig(t, 2, "10ms")
	outDir := t.TempDir()
	build := func(a, b joinInput) (*weir.Env, *syncBuffer) {
		env, log := newEnv(cfg)
		lines := weir.CoProcess(weir.ConnectKeyed(a.source(env, "a"), b.source(env, "b")), func() weir.KeyedCoProcessFunction[int64, joinRec, joinRec, string] {
			return &coCount{}
		}).UID("count")
		weir.SinkToTransactional(lines, file.ExactlyOnce(outDir, func(v string, dst []byte) []byte { return append(dst, v...) })).UID("out")
		return env, log
	}
	env1, log1 := build(a, b)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- env1.Execute(ctx, "test") }()
	waitUntil(t, done, func() bool { return hooks.Plan(env1).Status.CompletedCheckpoints.Load() >= 2 }, log1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: Execute = %v, want context.Canceled", err)
	}
	if err := cfg.Set(config.ParallelismDefault, "3"); err != nil {
		t.Fatal(err)
	}
	a.rate, b.rate = 0, 0
	env2, log2 := build(a, b)
	start := time.Now()
	execute(t, env2, log2)
	if !strings.Contains(log2.String(), "msg=restoring") {
		t.Fatalf("the second run did not restore a checkpoint:\n%s", log2)
	}
	lines, err := file.ReadCommitted(outDir)
	if err != nil {
		t.Fatal(err)
	}
	sameMultiset(t, want, lines)
	t.Logf("second run (p=3, restored) took %v", time.Since(start))
}
