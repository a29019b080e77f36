package demo_test

import (
	"context"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/testutil"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// run is one execution of the demo job in this process.
type run struct {
	n, k        int64
	parallelism int
	stateDir    string // state.checkpoints.dir; reused to resume
	out         string
	rate        float64
	interval    string            // execution.checkpointing.interval
	restart     map[string]string // restart-strategy.* keys; default fixed-delay 100 x 1ms
	extra       map[string]string // further config keys
	plan        *faults.Plan
	// discard lets a FINISHED run discard its checkpoints, as a job's own
	// runs do; by default the tests keep them to check what was retained.
	discard bool
	// opts are further Env options (weir.WithRerunFinished).
	opts []weir.Option
}

func newRun(t *testing.T, n, k int64, p int) *run {
	t.Helper()
	dir := t.TempDir()
	return &run{n: n, k: k, parallelism: p, interval: "10ms", stateDir: filepath.Join(dir, "state"), out: filepath.Join(dir, "out")}
}

// result is what one execution left behind.
type result struct {
	err      error
	inj      *faults.Injector
	env      *weir.Env
	log      *syncBuffer
	elapsed  time.Duration
	lines    []string
	readErr  error
	restarts int64
}

func (r *run) config(t *testing.T) *weir.Config {
	t.Helper()
	// r.restart, when set, names a whole restart strategy, which replaces
	// the default fixed-delay one.
	extra := map[string]string{}
	for k, v := range r.restart {
		extra[k] = v
	}
	for k, v := range r.extra {
		extra[k] = v
	}
	return testutil.FaultConfig(t, r.parallelism, r.stateDir, r.interval, false, extra)
}

// execute builds the demo on a fresh Env and runs it until it ends or ctx
// is done; onStart, if set, runs with the Env while the job runs.
func (r *run) execute(t *testing.T, ctx context.Context, onStart func(*weir.Env)) result {
	t.Helper()
	env := weir.NewEnv(append([]weir.Option{weir.WithConfig(r.config(t))}, r.opts...)...)
	res := result{env: env}
	res.log, res.inj = testutil.Observe(env, r.plan)
	if !r.discard {
		testutil.KeepFinishedCheckpoints(env)
	}
	demo.Build(env, demo.Options{Events: r.n, Keys: r.k, Rate: r.rate, Out: r.out})
	start := time.Now()
	if onStart != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() { defer close(done); onStart(env) }()
	}
	res.err = env.Execute(ctx, "demo")
	res.elapsed = time.Since(start)
	res.restarts = hooks.Plan(env).Status.Restarts.Load()
	res.lines, res.readErr = file.ReadCommitted(r.out)
	return res
}

// faultPlan is a OnePerAttempt plan over the demo's source events.
func faultPlan(failures int, seed int64, span int64, points ...faults.Point) *faults.Plan {
	return &faults.Plan{Failures: failures, Seed: seed, Span: span, Points: points, OnePerAttempt: true}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writers.
type syncBuffer = testutil.SyncBuffer

// duplicates counts lines that occur more than once (each extra copy).
func duplicates(lines []string) int {
	seen := make(map[string]bool, len(lines))
	d := 0
	for _, l := range lines {
		if seen[l] {
			d++
		}
		seen[l] = true
	}
	return d
}

// waitForTimeout bounds waitFor: far above what any wait here takes on a
// loaded machine (a few checkpoints at a 10 ms interval), far below the
// test binary's timeout.
const waitForTimeout = time.Minute

// waitFor polls cond until it holds, failing the test once waitForTimeout
// has passed. The callers wait for progress of a job running beside them
// (checkpoints completed) in an onStart goroutine; a job that ends before
// it makes that progress would otherwise leave them polling, and execute
// waiting for them, until the test binary's timeout. t.Fatalf ends the
// calling goroutine through runtime.Goexit, which runs execute's deferred
// close, so the test then returns.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitForTimeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for a condition that never held; did the job end first?", waitForTimeout)
		}
		<-tick.C
	}
}
