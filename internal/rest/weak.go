package rest

import (
	"time"

	"github.com/weirstream/weir/internal/config"
)

// WeakAccounting is the "weak" object of GET /jobs/{jobid} for a job in
// WEAKLY_CONSISTENT mode (jobstatus.WeakStats, docs/weak-consistency.md):
// counts since the job started, durations in milliseconds. Jobs in the
// other modes have no such object.
type WeakAccounting struct {
	// Failures counts task failures; TaskRestarts the task executions
	// deployed again, each alone from its own snapshot.
	Failures     int64 `json:"failures"`
	TaskRestarts int64 `json:"task-restarts"`
	// RecordsReplayed counts records producers sent again from their
	// in-flight logs to restarted consumers.
	RecordsReplayed int64 `json:"records-replayed"`
	// RecordsLost are exact: the records lost (a consumer needed them and
	// no log held them any more). RecordsDuplicated bound those possibly
	// delivered twice (a restarted task could not replay
	// deterministically).
	RecordsLost       int64 `json:"records-lost"`
	RecordsDuplicated int64 `json:"records-duplicated"`
	// RecordsDropped counts records the logs dropped for their size
	// bound, the lost ones included.
	RecordsDropped int64 `json:"records-dropped"`
	// SnapshotsCompleted and SnapshotsFailed count per-task snapshots.
	SnapshotsCompleted int64 `json:"snapshots-completed"`
	SnapshotsFailed    int64 `json:"snapshots-failed"`
	// Recoveries counts the task recoveries measured,
	// RecoveryDurationTotal their summed and LastRecoveryDuration the
	// latest one's time from the failure until the task processed again.
	Recoveries            int64 `json:"recoveries"`
	LastRecoveryDuration  int64 `json:"last-recovery-duration"`
	RecoveryDurationTotal int64 `json:"recovery-duration-total"`
}

// weakAccounting returns the weak object of j, nil unless j runs in
// WEAKLY_CONSISTENT mode.
func weakAccounting(j Job) *WeakAccounting {
	if c := j.Config(); c == nil || c.String(config.CheckpointingMode) != config.ModeWeak {
		return nil
	}
	w := &j.Status().Weak
	return &WeakAccounting{
		Failures:              w.Failures.Load(),
		TaskRestarts:          w.TaskRestarts.Load(),
		RecordsReplayed:       w.Replayed.Load(),
		RecordsLost:           w.Lost.Load(),
		RecordsDuplicated:     w.Duplicated.Load(),
		RecordsDropped:        w.Dropped.Load(),
		SnapshotsCompleted:    w.SnapshotsCompleted.Load(),
		SnapshotsFailed:       w.SnapshotsFailed.Load(),
		Recoveries:            w.Recoveries.Load(),
		LastRecoveryDuration:  nanosToMillis(w.LastRecoveryNanos.Load()),
		RecoveryDurationTotal: nanosToMillis(w.RecoveryNanos.Load()),
	}
}

// weakLogBound is the in-flight log bound of a configuration in
// WEAKLY_CONSISTENT mode, 0 in the others.
func weakLogBound(c *config.Config) int {
	if c.String(config.CheckpointingMode) != config.ModeWeak {
		return 0
	}
	return c.Int(config.WeakInFlightLogMaxRecords)
}

func nanosToMillis(n int64) int64 { return time.Duration(n).Milliseconds() }
