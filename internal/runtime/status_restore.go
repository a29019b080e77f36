package runtime

import (
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Restore timing. A restore is done when every subtask has opened its
// operators, which is where they read their checkpointed state (keyed
// files, or an LSM store's download and ingestion); replaying an unaligned
// checkpoint's channel state comes after and counts as processing. The
// JobManager marks the start of a restore per attempt (restoring); each
// subtask that restored state reports its own time from task start to
// operators opened (restoreDone); the attempt's restore duration is the
// slowest subtask's, since the job does not make progress before it.

// restoring records that attempt restores checkpoint id, starting at now.
func (s *JobStatus) restoring(id checkpoint.ID, attempt int, now time.Time) {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.restoreAttempt = attempt
	s.RestoredCheckpoint.Store(int64(id))
	s.LastRestoreTimestamp.Store(now.UnixMilli())
	s.LastRestoreDuration.Store(0)
}

// restoreDone records that a subtask of attempt restored its state in d.
// Reports of an older attempt (a task that finished restoring after its
// attempt was abandoned) are dropped.
func (s *JobStatus) restoreDone(attempt int, d time.Duration) {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	if attempt != m.restoreAttempt {
		return
	}
	if int64(d) > s.LastRestoreDuration.Load() {
		s.LastRestoreDuration.Store(int64(d))
	}
}

// restored reports the task's restore time, measured from start, if any
// of its operators restored state.
func (t *Task) restored(start time.Time) {
	if t.metrics == nil || t.metrics.job == nil {
		return
	}
	for _, oc := range t.chain.ocs {
		if oc.Restored != nil {
			t.metrics.job.restoreDone(oc.Attempt, t.now().Sub(start))
			return
		}
	}
}
