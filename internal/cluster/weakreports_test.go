package cluster

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/jobstatus"
)

// TestWeakFiguresSumSessions: the job's figures are the sum over every
// TaskManager session's latest report, a dead session's last one
// included; a session's final report is not overwritten by a periodic one
// that raced it, and awaitFinal waits only for live sessions.
func TestWeakFiguresSumSessions(t *testing.T) {
	var w weakFigures
	st := &jobstatus.WeakStats{}
	a, b := &TaskManager{}, &TaskManager{}
	w.update(a, &pb.WeakTaskReport{Failures: 1, Restarts: 1, Replayed: 10, Lost: 2, Dropped: 2}, false, st)
	w.update(b, &pb.WeakTaskReport{Failures: 2, Restarts: 2, Duplicated: 3, Recoveries: 2, RecoveryNanosTotal: 40}, false, st)
	w.update(a, &pb.WeakTaskReport{Failures: 1, Restarts: 1, Replayed: 15, Lost: 2, Dropped: 4}, true, st)
	w.update(a, &pb.WeakTaskReport{Failures: 9}, false, st) // periodic after the final: ignored
	got := [...]int64{st.Failures.Load(), st.TaskRestarts.Load(), st.Replayed.Load(), st.Lost.Load(), st.Duplicated.Load(), st.Dropped.Load(), st.Recoveries.Load(), st.RecoveryNanos.Load()}
	want := [...]int64{3, 3, 15, 2, 3, 4, 2, 40}
	if got != want {
		t.Errorf("figures %v, want %v", got, want)
	}
	start := time.Now()
	w.awaitFinal(func(tm *TaskManager) bool { return tm == a }, 5*time.Second) // b is dead: not waited for
	if d := time.Since(start); d > time.Second {
		t.Errorf("awaitFinal waited %v for a dead session", d)
	}
	start = time.Now()
	w.awaitFinal(func(*TaskManager) bool { return true }, 50*time.Millisecond) // b live, never final
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("awaitFinal returned after %v, before its timeout, with a live session not final", d)
	}
}
