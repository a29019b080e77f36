package demo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/jobstatus"
)

// A checkpoint triggered on demand (Flink's POST /jobs/:id/checkpoints)
// completes and shows in the history; job states follow the run.
func TestTriggerCheckpointOnDemand(t *testing.T) {
	r := newRun(t, 60_000, 53, 2)
	r.interval = "0" // no periodic checkpoints: every one here is on demand
	r.rate = 100_000
	var triggered []int64
	res := r.execute(t, context.Background(), func(env *weir.Env) {
		st := hooks.Plan(env).Status
		ctl := hooks.Plan(env).Control
		waitFor(t, func() bool { return st.State() == jobstatus.StateRunning })
		for len(triggered) < 2 {
			id, err := ctl.TriggerCheckpoint(context.Background())
			if err != nil {
				t.Errorf("trigger: %v", err)
				return
			}
			triggered = append(triggered, int64(id))
			waitFor(t, func() bool {
				for _, c := range st.Checkpoints(time.Now()) {
					if int64(c.ID) == int64(id) && c.Status != jobstatus.CheckpointInProgress {
						return true
					}
				}
				return false
			})
		}
	})
	if res.err != nil {
		t.Fatal(res.err)
	}
	if d := demo.Diff(demo.Expected(r.n, r.k), res.lines); d != "" {
		t.Fatal(d)
	}
	st := hooks.Plan(res.env).Status
	ctl := hooks.Plan(res.env).Control
	if st.State() != jobstatus.StateFinished {
		t.Fatalf("state %s after the run, want FINISHED", st.State())
	}
	hist := st.Checkpoints(time.Now())
	// The two on-demand checkpoints and the final one, all completed, with
	// every subtask (2 sources + 2 aggregator chains) acknowledged.
	if len(hist) != 3 {
		t.Fatalf("history %+v, want 3 checkpoints", hist)
	}
	for i, c := range hist {
		if c.Status != jobstatus.CheckpointCompleted || c.Acknowledged != 4 || c.Subtasks != 4 || c.StateSize <= 0 {
			t.Errorf("checkpoint %d: %+v", i, c)
		}
	}
	if int64(hist[0].ID) != triggered[0] || int64(hist[1].ID) != triggered[1] || hist[2].Kind != "final" {
		t.Errorf("history %+v, triggered %v", hist, triggered)
	}
	if _, err := ctl.TriggerCheckpoint(context.Background()); !errors.Is(err, jobstatus.ErrNotRunning) {
		t.Errorf("trigger after the end: %v, want ErrNotRunning", err)
	}
}
