package jobstatus

import (
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Restore timing. A restore is done when every subtask has opened its
// operators, which is where they read their checkpointed state (keyed
// files, or an LSM store's download and ingestion); replaying an unaligned
// checkpoint's channel state comes after and counts as processing. The
// JobManager marks the start of a restore per attempt (Restoring); each
// subtask that restored state reports its own time from task start to
// operators opened (RestoreDone); the attempt's restore duration is the
// slowest subtask's, since the job does not make progress before it.

// Restoring records that attempt restores checkpoint id, starting at now.
func (r *Recorder) Restoring(id checkpoint.ID, attempt int, now time.Time) {
	s := r.Status()
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.restoreAttempt = attempt
	s.RestoredCheckpoint.Store(int64(id))
	s.LastRestoreTimestamp.Store(now.UnixMilli())
	s.LastRestoreDuration.Store(0)
}

// RestoreDone records that a subtask of attempt restored its state in d.
// Reports of an older attempt (a task that finished restoring after its
// attempt was abandoned) are dropped.
func (r *Recorder) RestoreDone(attempt int, d time.Duration) {
	s := r.Status()
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
