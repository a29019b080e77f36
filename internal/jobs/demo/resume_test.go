package demo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestResumeAfterCancels is the demo's promise, "kill it at any moment and
// start the same command again": a rate-limited run is cancelled three
// times, each time after it completed a few more checkpoints, and then run
// to the end on the same state folder. The committed output is exact.
func TestResumeAfterCancels(t *testing.T) {
	const n, k = 40_000, 29
	r := newRun(t, n, k, 2)
	r.rate = 100_000
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		res := r.execute(t, ctx, func(env *weir.Env) {
			waitFor(t, func() bool { return hooks.Plan(env).Status.CompletedCheckpoints.Load() >= 3 })
			cancel()
		})
		cancel()
		if !errors.Is(res.err, context.Canceled) {
			t.Fatalf("run %d: Execute = %v, want context.Canceled\nlog:\n%s", i, res.err, res.log)
		}
		if msg := checkPrefix(demo.Expected(n, k), res.lines); msg != "" {
			t.Fatalf("after cancelled run %d: %s", i, msg)
		}
		t.Logf("run %d cancelled with %d lines committed", i, len(res.lines))
	}
	r.rate = 0
	res := r.execute(t, context.Background(), nil)
	if res.err != nil {
		t.Fatalf("final run: %v\nlog:\n%s", res.err, res.log)
	}
	if d := demo.Diff(demo.Expected(n, k), res.lines); d != "" {
		t.Fatalf("committed output after three cancels differs from the failure-free run: %s", d)
	}
}

// TestFailuresWithoutPeriodicCheckpoints: with checkpointing disabled (only
// the final checkpoint commits) every restart begins from scratch, and the
// aborted transactions leave nothing behind: the output is still exact.
func TestFailuresWithoutPeriodicCheckpoints(t *testing.T) {
	const n, k = 50_000, 31
	r := newRun(t, n, k, 2)
	r.interval = "0"
	r.plan = faultPlan(3, 9, n, faults.Process, faults.SnapshotSync, faults.AfterPreCommit, faults.Commit)
	res := r.execute(t, context.Background(), nil)
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	if res.inj.Fired() != 3 {
		t.Errorf("%d of 3 failures fired: %v", res.inj.Fired(), res.inj.Log())
	}
	if d := demo.Diff(demo.Expected(n, k), res.lines); d != "" {
		t.Fatalf("committed output differs from the failure-free run: %s", d)
	}
	t.Logf("fired %v, %d checkpoints completed", res.inj.Log(), hooks.Plan(res.env).Status.CompletedCheckpoints.Load())
}

// TestRunFinishedJobAgain: a job that FINISHED discards its checkpoints
// and records the run in its folder (docs/guarantees.md, "Running a job
// again"); a program's own Env.Execute of it again on the same state
// folder fails before it starts, naming the run and weir.WithRerunFinished.
// With that option it starts from scratch and says so; the exactly-once
// file sink then refuses to commit the earlier run's output a second
// time, naming the folder, and the output stays exactly that of one run.
func TestRunFinishedJobAgain(t *testing.T) {
	const n, k = 20_000, 23
	r := newRun(t, n, k, 2)
	r.discard = true
	first := r.execute(t, context.Background(), nil)
	if first.err != nil {
		t.Fatalf("run 1: %v\nlog:\n%s", first.err, first.log)
	}
	ents, err := os.ReadDir(filepath.Join(r.stateDir, "demo"))
	if err != nil || len(ents) != 1 || ents[0].Name() != "_finished.json" {
		t.Fatalf("a finished run left %v in its folder (%v), want only its finished-run marker", ents, err)
	}
	second := r.execute(t, context.Background(), nil)
	if !errors.Is(second.err, weir.ErrJobFinished) || !strings.Contains(second.err.Error(), "weir.WithRerunFinished()") {
		t.Fatalf("run 2 = %v, want the refusal of a run from scratch of a finished job", second.err)
	}
	if strings.Contains(second.log.String(), "starting from scratch") {
		t.Errorf("the refused run 2 got as far as its start line:\n%s", second.log)
	}
	r.opts = []weir.Option{weir.WithRerunFinished()}
	third := r.execute(t, context.Background(), nil)
	if third.err == nil || !strings.Contains(third.err.Error(), "already holds committed output of an earlier run") {
		t.Fatalf("run 3 (WithRerunFinished) = %v, want the sink's refusal to commit the earlier output again", third.err)
	}
	if !strings.Contains(third.log.String(), "starting from scratch") || !strings.Contains(third.log.String(), "running again from scratch (--rerun)") {
		t.Errorf("run 3 did not say it runs again from scratch:\n%s", third.log)
	}
	if d := demo.Diff(demo.Expected(n, k), third.lines); d != "" {
		t.Fatalf("after run 3: %s", d)
	}
}
