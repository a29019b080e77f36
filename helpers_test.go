package weir_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/testutil"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
)

// testConfig returns a configuration for in-process jobs: parallelism p,
// checkpoints every interval ("0" disables them) into a temporary folder,
// quick fixed-delay restarts, and the given extra keys.
func testConfig(t *testing.T, p int, interval string, extra ...string) *weir.Config {
	t.Helper()
	cfg := weir.NewConfig()
	kvs := []string{
		config.ParallelismDefault, fmt.Sprint(p),
		config.CheckpointsDir, filepath.Join(t.TempDir(), "state"),
		config.CheckpointingInterval, interval,
		config.RestartStrategyType, config.RestartFixed,
		config.FixedDelayAttempts, "50",
		config.FixedDelayDelay, "1ms",
		config.BatchSize, "256",
	}
	kvs = append(kvs, extra...)
	for i := 0; i < len(kvs); i += 2 {
		if err := cfg.Set(kvs[i], kvs[i+1]); err != nil {
			t.Fatalf("config %s=%s: %v", kvs[i], kvs[i+1], err)
		}
	}
	return cfg
}

// newEnv returns an Env whose log goes to the returned buffer.
func newEnv(cfg *weir.Config) (*weir.Env, *syncBuffer) {
	log := &syncBuffer{}
	env := weir.NewEnv(weir.WithConfig(cfg), weir.WithLogger(slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	return env, log
}

// injector returns a one-failure-per-attempt plan's injector set on env.
func injector(env *weir.Env, failures int, seed, span int64, points ...faults.Point) *faults.Injector {
	inj := faults.New(faults.Plan{Failures: failures, Seed: seed, Span: span, Points: points, OnePerAttempt: true})
	hooks.Plan(env).Faults = inj
	return inj
}

// sinkLines adds an exactly-once file sink of strings into a new folder
// and returns the folder.
func sinkLines(t *testing.T, s weir.Stream[string]) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	sinkInto(s, dir)
	return dir
}

// sinkInto adds an exactly-once file sink of strings into dir, uid "out".
func sinkInto(s weir.Stream[string], dir string) {
	weir.SinkToTransactional(s, file.ExactlyOnce(dir, func(v string, dst []byte) []byte { return append(dst, v...) })).UID("out")
}

// committed reads the sink folder's committed lines.
func committed(t *testing.T, dir string) []string {
	t.Helper()
	lines, err := file.ReadCommitted(dir)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// execute runs env's job and fails the test, with the log, if it fails.
func execute(t *testing.T, env *weir.Env, log *syncBuffer) {
	t.Helper()
	// A test job that has not ended after two minutes hangs: fail with its
	// log rather than let the package time out without it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "test"); err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", err, log)
	}
}

// sameMultiset fails the test unless got and want hold the same lines the
// same number of times, naming the first differences.
func sameMultiset(t *testing.T, want, got []string) {
	t.Helper()
	w, g := slices.Clone(want), slices.Clone(got)
	sort.Strings(w)
	sort.Strings(g)
	if slices.Equal(w, g) {
		return
	}
	counts := map[string]int{}
	for _, l := range w {
		counts[l]++
	}
	for _, l := range g {
		counts[l]--
	}
	var missing, extra []string
	for l, c := range counts {
		if c > 0 {
			missing = append(missing, fmt.Sprintf("%q x%d", l, c))
		}
		if c < 0 {
			extra = append(extra, fmt.Sprintf("%q x%d", l, -c))
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	t.Fatalf("want %d lines, got %d; missing %d: %s; extra %d: %s", len(want), len(got),
		len(missing), head(missing), len(extra), head(extra))
}

func head(s []string) string {
	if len(s) > 8 {
		s = s[:8]
	}
	return strings.Join(s, ", ")
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writers.
type syncBuffer = testutil.SyncBuffer

// waitUntil polls cond every millisecond while the job whose Execute
// result arrives on done runs; it fails the test if the job ends first.
func waitUntil(t *testing.T, done <-chan error, cond func() bool, log *syncBuffer) {
	t.Helper()
	for !cond() {
		select {
		case err := <-done:
			t.Fatalf("the job ended early: %v\nlog:\n%s", err, log)
		case <-time.After(time.Millisecond):
		}
	}
}

// cancelAfterCheckpoints runs env's job until n checkpoints completed,
// then cancels it (its checkpoints stay for a restore) and fails the test
// if it ended any other way.
func cancelAfterCheckpoints(t *testing.T, env *weir.Env, log *syncBuffer, n int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- env.Execute(ctx, "test") }()
	waitUntil(t, done, func() bool { return hooks.Plan(env).Status.CompletedCheckpoints.Load() >= n }, log)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}
}
