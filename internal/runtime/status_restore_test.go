package runtime

import (
	"testing"
	"time"
)

// The restore duration of an attempt is its slowest subtask's; a new
// restore starts from zero, and a late report of an older attempt does
// not count.
func TestRestoreDuration(t *testing.T) {
	var s JobStatus
	at := time.UnixMilli(1_700_000_000_000)
	s.restoring(7, 1, at)
	if s.RestoredCheckpoint.Load() != 7 || s.LastRestoreTimestamp.Load() != at.UnixMilli() || s.LastRestoreDuration.Load() != 0 {
		t.Fatalf("after restoring: id %d, timestamp %d, duration %d", s.RestoredCheckpoint.Load(), s.LastRestoreTimestamp.Load(), s.LastRestoreDuration.Load())
	}
	for _, d := range []time.Duration{3 * time.Millisecond, 9 * time.Millisecond, 5 * time.Millisecond} {
		s.restoreDone(1, d)
	}
	if got := time.Duration(s.LastRestoreDuration.Load()); got != 9*time.Millisecond {
		t.Fatalf("attempt 1: duration %v, want the slowest subtask's 9ms", got)
	}
	s.restoring(8, 2, at.Add(time.Second))
	s.restoreDone(1, time.Second) // attempt 1's straggler
	s.restoreDone(2, 2*time.Millisecond)
	if got := time.Duration(s.LastRestoreDuration.Load()); got != 2*time.Millisecond {
		t.Fatalf("attempt 2: duration %v, want 2ms", got)
	}
}

// A task reports its restore time only when one of its operators restored
// state.
func TestTaskRestoredReportsOnlyRestores(t *testing.T) {
	var s JobStatus
	s.restoring(3, 0, time.Unix(0, 0))
	now := time.Unix(10, 0)
	task := func(restored *RestoredState) *Task {
		return &Task{metrics: &TaskMetrics{job: &s}, now: func() time.Time { return now },
			chain: chain{ocs: []*OperatorContext{{}, {Restored: restored}}}}
	}
	task(nil).restored(now.Add(-time.Second))
	if d := s.LastRestoreDuration.Load(); d != 0 {
		t.Fatalf("a task without restored state reported %v", time.Duration(d))
	}
	task(&RestoredState{Checkpoint: 3}).restored(now.Add(-40 * time.Millisecond))
	if d := time.Duration(s.LastRestoreDuration.Load()); d != 40*time.Millisecond {
		t.Fatalf("restored task reported %v, want 40ms", d)
	}
}
