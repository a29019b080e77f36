package app

import (
	"fmt"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
)

// weakMode reports whether cfg selects WEAKLY_CONSISTENT checkpointing
// (docs/weak-consistency.md), as the plan decides it for the job.
func weakMode(cfg *weir.Config) bool {
	return hooks.Config(cfg).String(config.CheckpointingMode) == config.ModeWeak
}

// WeakFigures is a WEAKLY_CONSISTENT job's failover accounting to its
// end; docs/weak-consistency.md ("Accounting") defines each counter.
type WeakFigures struct {
	// Failures counts task failures; TaskRestarts the task executions
	// deployed again, each alone from its own snapshot.
	Failures, TaskRestarts int64
	// Replayed counts the records producers sent again from their
	// in-flight logs to restarted consumers.
	Replayed int64
	// Lost counts the records a consumer needed that no log held any
	// more, exactly; Duplicated the records possibly duplicated, an upper
	// bound.
	Lost, Duplicated int64
}

// weakFiguresOf reads a local job's accounting from its status.
func weakFiguresOf(w *jobstatus.WeakStats) *WeakFigures {
	return &WeakFigures{Failures: w.Failures.Load(), TaskRestarts: w.TaskRestarts.Load(), Replayed: w.Replayed.Load(),
		Lost: w.Lost.Load(), Duplicated: w.Duplicated.Load()}
}

// weakFiguresFrom reads a cluster job's accounting from its last update:
// the JobManager's sums of what its TaskManagers reported.
func weakFiguresFrom(w *pb.WeakTaskReport) *WeakFigures {
	return &WeakFigures{Failures: w.GetFailures(), TaskRestarts: w.GetRestarts(), Replayed: w.GetReplayed(),
		Lost: w.GetLost(), Duplicated: w.GetDuplicated()}
}

// line is the line a run in WEAKLY_CONSISTENT mode ends with, after the
// summary, whether the job succeeded or not (a local run) or once it
// ended (an attached client):
//
//	weak failover: 3 failures, 3 task restarts, 1208 replayed, 0 lost, 0 duplicated
func (w *WeakFigures) line() string {
	return fmt.Sprintf("weak failover: %d failures, %d task restarts, %d replayed, %d lost, %d duplicated",
		w.Failures, w.TaskRestarts, w.Replayed, w.Lost, w.Duplicated)
}

// weakSnapshotLine is the progress line's checkpoint part in
// WEAKLY_CONSISTENT mode: there is no global checkpoint to report, but
// each task's own snapshots and restarts. (The runtime counts the tasks'
// snapshots and restarts in the job's checkpoint and restart counters
// too, so those would only repeat them.)
func (p *progress) weakSnapshotLine() string {
	w := &p.st.Weak
	s := fmt.Sprintf("task snapshots %d", w.SnapshotsCompleted.Load())
	if f := w.SnapshotsFailed.Load(); f > 0 {
		s += fmt.Sprintf("  failed %d", f)
	}
	if r := w.TaskRestarts.Load(); r > 0 {
		s += fmt.Sprintf("  task restarts %d", r)
	}
	return s
}
