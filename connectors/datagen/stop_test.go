package datagen_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
)

func testEnv(t *testing.T, p int, extra map[string]string) *weir.Env {
	t.Helper()
	cfg := weir.NewConfig()
	kv := map[string]string{config.ParallelismDefault: fmt.Sprint(p), config.CheckpointsDir: t.TempDir(), config.BatchSize: "64", config.CheckpointingInterval: "50 ms"}
	for k, v := range extra {
		kv[k] = v
	}
	for k, v := range kv {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	return weir.NewEnv(weir.WithConfig(cfg))
}

// runUntilStopped runs an unbounded, rate-limited datagen at parallelism p
// (from a savepoint if given) and stops it with a savepoint after a few
// checkpoints.
func runUntilStopped(t *testing.T, p int, from string) string {
	t.Helper()
	env := testEnv(t, p, nil)
	if from != "" {
		hooks.Plan(env).FromPath = from
	}
	// At parallelism 3, subtask 2 owns no index at all.
	owner := func(i int64, p int) int { return int((i % 2) % int64(p)) }
	var mu sync.Mutex
	var got []int64
	src := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithOwner(owner), datagen.WithOwnerPeriod(2), datagen.WithRate(20000))).UID("src")
	weir.SinkTo(src, func() weir.Sink[int64] { return collect{&mu, &got} }).UID("sink")
	var sp string
	var spErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		st := hooks.Plan(env).Status
		ctl := hooks.Plan(env).Control
		for st.CompletedCheckpoints.Load() < 4 && st.State() != jobstatus.StateFailed {
			time.Sleep(5 * time.Millisecond)
		}
		sp, spErr = ctl.StopWithSavepoint(context.Background(), filepath.Join(t.TempDir(), "sp"))
	}()
	if err := env.Execute(context.Background(), "gen"); err != nil {
		t.Fatalf("parallelism %d from %q: %v", p, from, err)
	}
	<-done
	if spErr != nil {
		t.Fatal(spErr)
	}
	return sp
}

// A rescale leaves positions to catch up with; a subtask that owns no index
// must drop them too, or the next rescale is refused forever.
func TestRescaleTwiceThroughSavepoints(t *testing.T) {
	a := runUntilStopped(t, 2, "")
	b := runUntilStopped(t, 3, a)
	runUntilStopped(t, 2, b)
}

// failOnce is a 2PC sink whose Commit fails once when armed.
type failOnce struct{ armed *atomic.Bool }

func (f failOnce) Open(context.Context, *weir.RuntimeContext, []int64) error { return nil }
func (f failOnce) Begin(ctx context.Context) (int64, error)                  { return 0, nil }
func (f failOnce) Write(context.Context, int64, []int64) error               { return nil }
func (f failOnce) PreCommit(context.Context, int64) error                    { return nil }
func (f failOnce) Commit(context.Context, int64) error {
	if f.armed.CompareAndSwap(true, false) {
		return fmt.Errorf("commit failed (injected once)")
	}
	return nil
}
func (f failOnce) Abort(context.Context, int64) error { return nil }
func (f failOnce) Close(context.Context) error        { return nil }

// A stop is answered only once the job has ended: when committing the
// final checkpoint fails, the restarted job stops again, and the caller
// hears back after that.
func TestStopAnsweredWhenJobEnded(t *testing.T) {
	env := testEnv(t, 1, map[string]string{config.RestartStrategyType: "fixed-delay", config.FixedDelayAttempts: "3",
		config.FixedDelayDelay: "10 ms", config.CheckpointingInterval: "1 h"})
	var armed atomic.Bool
	src := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithRate(10000))).UID("src")
	weir.SinkToTransactional(weir.Rebalance(src), func() weir.TwoPhaseCommitSink[int64, int64] { return failOnce{&armed} }).UID("sink")
	res := make(chan error, 1)
	go func() { res <- env.Execute(context.Background(), "gen") }()
	st := hooks.Plan(env).Status
	ctl := hooks.Plan(env).Control
	for st.State() != jobstatus.StateRunning {
		time.Sleep(5 * time.Millisecond)
	}
	armed.Store(true)
	sp, err := ctl.StopWithSavepoint(context.Background(), filepath.Join(t.TempDir(), "sp"))
	if err != nil {
		t.Fatal(err)
	}
	if s := st.State(); s != jobstatus.StateFinished {
		t.Fatalf("stop answered (%s) while the job is %s", sp, s)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if st.Restarts.Load() != 1 {
		t.Fatalf("%d restarts, want 1 (the failed commit)", st.Restarts.Load())
	}
}
