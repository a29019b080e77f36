package kafka

import (
	"context"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/testutil"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/faults"
)

// job is one in-process execution of a test pipeline.
type job struct {
	parallelism int
	stateDir    string
	interval    string
	plan        *faults.Plan
	restartNone bool
	ctx         context.Context   // nil: never cancelled
	extra       map[string]string // more configuration keys
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
	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, j.parallelism, j.stateDir, j.interval, j.restartNone, j.extra)))
	// Later runs restore this run's checkpoints even when it finished.
	testutil.KeepFinishedCheckpoints(env)
	o := outcome{env: env}
	o.log, o.inj = testutil.Observe(env, j.plan)
	build(env)
	start := time.Now()
	ctx := j.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	o.err = env.Execute(ctx, "kafka-test")
	o.elapsed = time.Since(start)
	o.restarts = hooks.Plan(env).Status.Restarts.Load()
	return o
}

// onePerAttempt is a fault plan whose failures each cause their own restart.
func onePerAttempt(failures int, seed, span int64, points ...faults.Point) *faults.Plan {
	return &faults.Plan{Failures: failures, Seed: seed, Span: span, Points: points, OnePerAttempt: true}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writers.
type syncBuffer = testutil.SyncBuffer
