package nats

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/testutil"
)

// job is one in-process execution of a test pipeline.
type job struct {
	parallelism int
	stateDir    string
	interval    string
	plan        *faults.Plan
	restartNone bool
	ctx         context.Context // nil: never cancelled
	extra       map[string]string
}

func newJob(t *testing.T, p int) *job {
	return &job{parallelism: p, stateDir: filepath.Join(t.TempDir(), "state"), interval: "20ms"}
}

// outcome is what an execution left behind.
type outcome struct {
	err      error
	inj      *faults.Injector
	env      *weir.Env
	log      *testutil.SyncBuffer
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
	o.err = env.Execute(ctx, "nats-test")
	o.elapsed = time.Since(start)
	o.restarts = hooks.Plan(env).Status.Restarts.Load()
	return o
}

// onePerAttempt is a fault plan whose failures each cause their own restart.
func onePerAttempt(failures int, seed, span int64, points ...faults.Point) *faults.Plan {
	return &faults.Plan{Failures: failures, Seed: seed, Span: span, Points: points, OnePerAttempt: true}
}

func stringValue(m *Msg) (string, error) { return string(m.Data), nil }

func appendString(v string, dst []byte) []byte { return append(dst, v...) }

// readFiles returns the committed lines under dir, sorted.
func readFiles(t *testing.T, dir string) []string {
	t.Helper()
	lines, err := file.ReadCommitted(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines
}

// payloads returns "<prefix><i>" for i in [from, to), sorted.
func payloads(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	slices.Sort(out)
	return out
}

// firstDiff describes how two sorted line lists differ.
func firstDiff(want, got []string) string {
	count := map[string]int{}
	for _, l := range want {
		count[l]++
	}
	for _, l := range got {
		count[l]--
	}
	var missing, extra int
	var ex, mi []string
	for l, c := range count {
		if c > 0 {
			missing += c
			if len(mi) < 5 {
				mi = append(mi, l)
			}
		}
		if c < 0 {
			extra -= c
			if len(ex) < 5 {
				ex = append(ex, l)
			}
		}
	}
	return fmt.Sprintf("%d missing (e.g. %q), %d extra or duplicated (e.g. %q)", missing, mi, extra, ex)
}
