package jobstatus

import (
	"testing"
	"time"
)

// The restore duration of an attempt is its slowest subtask's; a new
// restore starts from zero, and a late report of an older attempt does
// not count.
func TestRestoreDuration(t *testing.T) {
	var st JobStatus
	s := RecorderOf(&st)
	at := time.UnixMilli(1_700_000_000_000)
	s.Restoring(7, 1, at)
	if s.RestoredCheckpoint.Load() != 7 || s.LastRestoreTimestamp.Load() != at.UnixMilli() || s.LastRestoreDuration.Load() != 0 {
		t.Fatalf("after restoring: id %d, timestamp %d, duration %d", s.RestoredCheckpoint.Load(), s.LastRestoreTimestamp.Load(), s.LastRestoreDuration.Load())
	}
	for _, d := range []time.Duration{3 * time.Millisecond, 9 * time.Millisecond, 5 * time.Millisecond} {
		s.RestoreDone(1, d)
	}
	if got := time.Duration(s.LastRestoreDuration.Load()); got != 9*time.Millisecond {
		t.Fatalf("attempt 1: duration %v, want the slowest subtask's 9ms", got)
	}
	s.Restoring(8, 2, at.Add(time.Second))
	s.RestoreDone(1, time.Second) // attempt 1's straggler
	s.RestoreDone(2, 2*time.Millisecond)
	if got := time.Duration(s.LastRestoreDuration.Load()); got != 2*time.Millisecond {
		t.Fatalf("attempt 2: duration %v, want 2ms", got)
	}
}
