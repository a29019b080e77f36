package app

import (
	"context"
	"fmt"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/runtime"
)

// weakMode reports whether cfg selects WEAKLY_CONSISTENT checkpointing
// (docs/weak-consistency.md), as the plan decides it for the job.
func weakMode(cfg *weir.Config) bool {
	return hooks.Config(cfg).String(config.CheckpointingMode) == config.ModeWeak
}

// weakLine is the line a local run in WEAKLY_CONSISTENT mode ends with,
// after the summary, whether the job succeeded or not: its failover
// accounting, in the words of docs/weak-consistency.md.
//
//	weak failover: 3 failures, 3 task restarts, 1208 replayed, 0 lost, 0 duplicated
func weakLine(w *runtime.WeakStats) string {
	return weakLineOf(w.Failures.Load(), w.TaskRestarts.Load(), w.Replayed.Load(), w.Lost.Load(), w.Duplicated.Load())
}

// weakClusterLine is weakLine for a job that ran on a cluster: the
// JobManager's sums of what its TaskManagers reported, from the job's
// last update.
func weakClusterLine(w *pb.WeakTaskReport) string {
	return weakLineOf(w.GetFailures(), w.GetRestarts(), w.GetReplayed(), w.GetLost(), w.GetDuplicated())
}

func weakLineOf(failures, restarts, replayed, lost, duplicated int64) string {
	return fmt.Sprintf("weak failover: %d failures, %d task restarts, %d replayed, %d lost, %d duplicated",
		failures, restarts, replayed, lost, duplicated)
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

// weakFiguresKey carries a cluster job's weak figures to Run.Finish.
type weakFiguresKey struct{}

// ClusterWeakFigures returns, in the ctx an attached client passes to
// Run.Finish, the records a WEAKLY_CONSISTENT job lost and possibly
// duplicated as its JobManager counted them to its end; ok is false in a
// local run (whose figures are in the job's status) and in other modes.
func ClusterWeakFigures(ctx context.Context) (lost, duplicated int64, ok bool) {
	w, ok := ctx.Value(weakFiguresKey{}).(*pb.WeakTaskReport)
	if !ok {
		return 0, 0, false
	}
	return w.GetLost(), w.GetDuplicated(), true
}
