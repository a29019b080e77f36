package demo_test

import (
	"context"
	"errors"
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

// TestRunFinishedJobAgain: running a job that already finished again on the
// same state folder restores its final checkpoint, whose sources are at the
// end of their input: nothing more is committed, and nothing twice.
func TestRunFinishedJobAgain(t *testing.T) {
	const n, k = 20_000, 23
	r := newRun(t, n, k, 2)
	for i := range 2 {
		res := r.execute(t, context.Background(), nil)
		if res.err != nil {
			t.Fatalf("run %d: %v\nlog:\n%s", i, res.err, res.log)
		}
		if d := demo.Diff(demo.Expected(n, k), res.lines); d != "" {
			t.Fatalf("after run %d: %s", i, d)
		}
		if i == 1 && !strings.Contains(res.log.String(), "msg=restoring") {
			t.Errorf("the second run did not restore the final checkpoint:\n%s", res.log)
		}
	}
}
