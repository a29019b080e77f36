package windows_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/windows"
)

// TestWindowsWeakConsistentUnderFaults runs the windowed job in
// WEAKLY_CONSISTENT mode with failures at every fault point, for each
// assigner: a restarted window operator restores its windows and timers
// from its own snapshot, is replayed its input from the producers' logs
// in the order its determinants logged, and fires what it owes; with logs
// large enough nothing is lost or duplicated, so the committed output
// must be the failure-free closed form exactly and the accounting must
// say so (seed 001: "losing a record that triggers a window").
func TestWindowsWeakConsistentUnderFaults(t *testing.T) {
	assigners := []string{"tumble:50", "slide:60,20", "session:4"}
	const n = 3000
	for ai, w := range assigners {
		for pi, point := range faults.AllPoints() {
			p := (pi+ai)%3 + 1
			t.Run(fmt.Sprintf("%s/%s/p%d", w, point, p), func(t *testing.T) {
				o := smallOptions(t, w, n)
				o.Rate = rateFor("heap")
				r := newFRun(t, o, p, "heap")
				r.extra = map[string]string{config.CheckpointingMode: config.ModeWeak}
				r.plan = faultPlan(failuresPerRun, int64(701*pi+17*ai+p), n, point)
				res := r.execute(t, context.Background(), nil)
				checkFailures(t, res, failuresPerRun)
				wk := &hooks.Plan(res.env).Status.Weak
				summary := fmt.Sprintf("weak failover: %d failures, %d task restarts, %d replayed, %d lost, %d duplicated",
					wk.Failures.Load(), wk.TaskRestarts.Load(), wk.Replayed.Load(), wk.Lost.Load(), wk.Duplicated.Load())
				if wk.Lost.Load() != 0 || wk.Duplicated.Load() != 0 {
					t.Fatalf("%s: the logs are large enough, nothing may be lost or duplicated", summary)
				}
				if err := windows.Verify(r.o, res.lines, res.late); err != nil {
					t.Fatalf("committed output differs from the failure-free closed form: %v\n%s\nfired: %v", err, summary, res.inj.Log())
				}
				t.Logf("exact; %s; fired %v", summary, res.inj.Log())
			})
		}
	}
}
