package demo_test

import (
	"context"
	"fmt"
	"github.com/weirstream/weir/internal/testutil"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
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
	cfg := weir.NewConfig()
	set := func(k, v string) {
		if err := cfg.Set(k, v); err != nil {
			t.Fatalf("config %s=%s: %v", k, v, err)
		}
	}
	set(config.ParallelismDefault, fmt.Sprint(r.parallelism))
	set(config.CheckpointsDir, r.stateDir)
	set(config.CheckpointingInterval, r.interval)
	// Small batches and few credits keep few records in flight, so that a
	// barrier gets through quickly and checkpoints complete early in a run:
	// most injected failures then restore from a checkpoint.
	set(config.BatchSize, "256")
	set(config.NetworkCreditsPerChannel, "2")
	if r.restart == nil {
		set(config.RestartStrategyType, config.RestartFixed)
		set(config.FixedDelayAttempts, "100")
		set(config.FixedDelayDelay, "1ms")
	}
	for k, v := range r.restart {
		set(k, v)
	}
	for k, v := range r.extra {
		set(k, v)
	}
	return cfg
}

// execute builds the demo on a fresh Env and runs it until it ends or ctx
// is done; onStart, if set, runs with the Env while the job runs.
func (r *run) execute(t *testing.T, ctx context.Context, onStart func(*weir.Env)) result {
	t.Helper()
	env := weir.NewEnv(r.config(t))
	res := result{env: env, log: &syncBuffer{}}
	env.SetLogger(slog.New(slog.NewTextHandler(res.log, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if r.plan != nil {
		res.inj = faults.New(*r.plan)
		env.SetFaultInjector(res.inj)
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
	res.restarts = env.Status().Restarts.Load()
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
