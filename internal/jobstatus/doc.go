// Package jobstatus is the read model of a job: what monitoring, the run
// summary and the job's owner read while it runs and after it ended. A
// JobStatus holds the job's state and start and end times (JobState,
// with Flink's names), the recent checkpoint history (CheckpointStats,
// each with its subtasks' SubtaskCheckpointStats: sizes, in-flight data,
// alignment), the job's vertices (VertexInfo), the running subtasks'
// counters (TaskStats, TaskWeakStats), and lock-free counters:
// checkpoints completed and failed (by cause, with the storage alert
// flag), restores and their timing, remote bytes, and the
// WEAKLY_CONSISTENT accounting (WeakStats).
//
// Three audiences, three types:
//
//   - Readers (internal/rest, internal/metrics, internal/dashboard, app's
//     progress line and summary, weir.Job's Stats, benchmarks) hold a
//     *JobStatus: its methods are typed snapshots (State, Times,
//     Checkpoints, Vertices, Tasks, FailedByCause) and its counters are
//     atomics they Load.
//   - Writers hold a *Recorder, the same status with the writers' method
//     set (RecorderOf): the runtime's JobMaster driver records states,
//     checkpoints, failures and restores, its tasks count source records
//     and restored channel state, the cluster's JobManager sums the
//     TaskManagers' weak figures, and the Env that owns a status resets
//     it between runs.
//   - Callers that command a job (a checkpoint, a savepoint, a stop) get
//     a Control, which the runtime implements; the status carries no
//     commands.
//
// A walk through one checkpoint, as the JobMaster driver records it:
//
//	rec := jobstatus.RecorderOf(cfg.Status)
//	rec.CheckpointTriggered(7, checkpoint.Periodic, now)   // history: IN_PROGRESS
//	rec.CheckpointAcknowledged(7, taskState, now)          // once per subtask
//	rec.CheckpointPersisted(7, jobstatus.SizesOf(states))  // metadata written
//	rec.CompletedCheckpoints.Add(1)
//	rec.CheckpointCompleted(7, time.Since(trigger))        // COMPLETED, latest in-flight figures
//
// and a REST handler reads it back with status.Checkpoints(now).
//
// Owns: the job's read model, its recording, and the Control interface.
// Must not touch: the runtime, the cluster, REST, metrics or the public
// API (checked by internal/archtest: it is a lower layer); no goroutine,
// no IO. Only the writers named above may use Recorder, and no other
// package writes the status' counters (internal/archtest).
package jobstatus
