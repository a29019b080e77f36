package kafka

import (
	"context"
	"fmt"
	"github.com/weirstream/weir/internal/testutil"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
)

// job is one in-process execution of a test pipeline.
type job struct {
	parallelism int
	stateDir    string
	interval    string
	plan        *faults.Plan
	restartNone bool
	ctx         context.Context // nil: never cancelled
}

func newJob(t *testing.T, p int) *job {
	return &job{parallelism: p, stateDir: filepath.Join(t.TempDir(), "state"), interval: "10ms"}
}

// outcome is what an execution left behind.
type outcome struct {
	err      error
	inj      *faults.Injector
	env      *weir.Env
	log      *syncBuffer
	restarts int64
	elapsed  time.Duration
}

// run builds the pipeline with build on a fresh Env and executes it.
func (j *job) run(t *testing.T, build func(env *weir.Env)) outcome {
	t.Helper()
	cfg := weir.NewConfig()
	set := func(k, v string) {
		if err := cfg.Set(k, v); err != nil {
			t.Fatalf("config %s=%s: %v", k, v, err)
		}
	}
	set(config.ParallelismDefault, fmt.Sprint(j.parallelism))
	set(config.CheckpointsDir, j.stateDir)
	set(config.CheckpointingInterval, j.interval)
	set(config.BatchSize, "256")
	set(config.NetworkCreditsPerChannel, "2")
	if j.restartNone {
		set(config.RestartStrategyType, config.RestartNone)
	} else {
		set(config.RestartStrategyType, config.RestartFixed)
		set(config.FixedDelayAttempts, "100")
		set(config.FixedDelayDelay, "1ms")
	}
	env := weir.NewEnv(cfg)
	o := outcome{env: env, log: &syncBuffer{}}
	env.SetLogger(slog.New(slog.NewTextHandler(o.log, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if j.plan != nil {
		o.inj = faults.New(*j.plan)
		env.SetFaultInjector(o.inj)
	}
	build(env)
	start := time.Now()
	ctx := j.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	o.err = env.Execute(ctx, "kafka-test")
	o.elapsed = time.Since(start)
	o.restarts = env.Status().Restarts.Load()
	return o
}

// onePerAttempt is a fault plan whose failures each cause their own restart.
func onePerAttempt(failures int, seed, span int64, points ...faults.Point) *faults.Plan {
	return &faults.Plan{Failures: failures, Seed: seed, Span: span, Points: points, OnePerAttempt: true}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writers.
type syncBuffer = testutil.SyncBuffer
