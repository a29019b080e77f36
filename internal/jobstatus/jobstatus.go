package jobstatus

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/weirstream/weir/internal/checkpoint/coordinator"
)

// JobStatus is the live view of a running job for progress reports and
// metrics. Fields are atomics so readers need no lock: they Load them,
// and only the job's writers store them, through its Recorder
// (RecorderOf). The zero value is a job not yet started (CREATED).
type JobStatus struct {
	// SourceRecords counts records emitted by sources, replays included.
	SourceRecords atomic.Int64
	Restarts      atomic.Int64
	// LostTransactions counts the pre-committed transactions a sink
	// found lost at commit (dataflow.ErrTransactionLost): output a
	// completed checkpoint promised that no restart can bring back.
	LostTransactions     atomic.Int64
	CompletedCheckpoints atomic.Int64
	// AutoscalerRescales counts the rescales the autoscaler carried out.
	AutoscalerRescales atomic.Int64
	FailedCheckpoints  atomic.Int64
	// ReactiveRescales counts the rescales reactive mode asked for
	// (scheduler-mode: reactive) that were carried out.
	ReactiveRescales atomic.Int64
	// FailedStorage counts the failed checkpoints whose cause was
	// checkpoint storage; StorageFailing is 1 from a storage failure
	// until the next completed checkpoint.
	FailedStorage  atomic.Int64
	StorageFailing atomic.Bool
	// failedByCause counts FailedCheckpoints by coordinator.Cause.
	failedByCause    [8]atomic.Int64
	LastCheckpointID atomic.Int64
	// LastCheckpointDuration is trigger-to-completion, in nanoseconds.
	LastCheckpointDuration atomic.Int64
	// LastCheckpointSize is the bytes the last completed checkpoint
	// persisted itself (Flink's lastCheckpointSize): for an incremental
	// checkpoint the files it uploaded, not those of earlier checkpoints
	// it references.
	LastCheckpointSize atomic.Int64
	// LastCheckpointFullSize is the bytes of all state the last completed
	// checkpoint references (Flink's lastCheckpointFullSize); equal to
	// LastCheckpointSize for full snapshots.
	LastCheckpointFullSize atomic.Int64
	// The last completed checkpoint's in-flight data (CheckpointStats):
	// bytes alignment held back, bytes processed during alignment, bytes
	// of channel state persisted.
	LastCheckpointAlignmentBuffered atomic.Int64
	LastCheckpointProcessedData     atomic.Int64
	LastCheckpointPersistedData     atomic.Int64
	// RestoredCheckpoint is the id the current attempt restored from (0: none).
	RestoredCheckpoint atomic.Int64
	// RestoredChannelStateBytes counts the bytes of channel state (in-flight
	// records of unaligned checkpoints) restored by all attempts.
	RestoredChannelStateBytes atomic.Int64
	// Remote channels (between TaskManagers: cluster mode, or local mode
	// with minicluster.number-of-taskmanagers above 1). RemoteBytesSent
	// counts the encoded record bytes sent to consumers on other
	// TaskManagers (Flink's numBytesOutRemote), added as each execution's
	// remote channels close. RecordedRemoteChannelStateBytes counts the
	// bytes of channel state recorded from remote channels' serialized
	// batches, RestoredRemoteChannelStateBytes the channel state restored
	// for channels whose producer runs on another TaskManager.
	// RemotePrioritizedBarriers counts barriers that a consumer's alignment
	// timeout moved ahead of the data queued at a remote producer (the
	// Prioritize frame).
	RemoteBytesSent                 atomic.Int64
	RemotePrioritizedBarriers       atomic.Int64
	RecordedRemoteChannelStateBytes atomic.Int64
	RestoredRemoteChannelStateBytes atomic.Int64
	// LastRestoreTimestamp is when the last restore from a checkpoint
	// began, in Unix milliseconds (Flink's lastCheckpointRestoreTimestamp;
	// 0: never). LastRestoreDuration is how long it took, in nanoseconds:
	// the slowest subtask's time from its start until its operators had
	// restored their state (restore.go).
	LastRestoreTimestamp atomic.Int64
	LastRestoreDuration  atomic.Int64
	lastFailure          atomic.Pointer[string]

	// Weak is the accounting of WEAKLY_CONSISTENT mode (all zero in the
	// other modes).
	Weak WeakStats

	once sync.Once
	m    *monitor
}

// LastFailure returns the most recent failure cause, if any.
func (s *JobStatus) LastFailure() string {
	if p := s.lastFailure.Load(); p != nil {
		return *p
	}
	return ""
}

// FailedByCause returns FailedCheckpoints by cause ("storage", "declined",
// "timeout", "task-failure", "registration"), the causes with a count
// only, most first.
func (s *JobStatus) FailedByCause() []CauseCount {
	var out []CauseCount
	for _, c := range coordinator.Causes() {
		if n := s.failedByCause[int(c)%len(s.failedByCause)].Load(); n > 0 {
			out = append(out, CauseCount{Cause: c.String(), Count: n})
		}
	}
	slices.SortStableFunc(out, func(a, b CauseCount) int { return cmp.Compare(b.Count, a.Count) })
	return out
}

// CauseCount is a number of failed checkpoints of one cause.
type CauseCount struct {
	Cause string
	Count int64
}

// WeakStats is the accounting of WEAKLY_CONSISTENT mode
// (docs/weak-consistency.md): what failed, what restarted alone, what the
// in-flight logs replayed, and every record lost or possibly duplicated,
// counted exactly.
type WeakStats struct {
	// Failures counts task failures (a lost TaskManager counts once per
	// task it ran); TaskRestarts the task executions deployed again.
	Failures     atomic.Int64
	TaskRestarts atomic.Int64
	// Replayed counts records producers sent again from their in-flight
	// logs to restarted consumers.
	Replayed atomic.Int64
	// Lost counts records a consumer needed that no log held any more:
	// dropped by execution.checkpointing.weak.in-flight-log.max-records
	// before it read them, or after, when it restarts from before them.
	// Each record once.
	Lost atomic.Int64
	// Duplicated counts records delivered twice because a restarted
	// producer could not replay deterministically.
	Duplicated atomic.Int64
	// Dropped counts records the logs dropped for their size bound, those
	// lost for it included (the others are lost only if their consumer
	// restarts from before them).
	Dropped atomic.Int64
	// SnapshotsCompleted and SnapshotsFailed count per-task snapshots.
	SnapshotsCompleted atomic.Int64
	SnapshotsFailed    atomic.Int64
	// RecoveryNanos is the sum, and LastRecoveryNanos the latest, of the
	// times from a task's failure until its new execution processes again;
	// Recoveries how many were measured.
	RecoveryNanos     atomic.Int64
	LastRecoveryNanos atomic.Int64
	Recoveries        atomic.Int64
}
