package coordinator

import (
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// epoch is the origin of test time; times print as offsets from it.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return epoch.Add(d) }

func since(t time.Time) time.Duration { return t.Sub(epoch) }

func taskName(t checkpoint.TaskID) string { return fmt.Sprintf("%d/%d", t.Vertex, t.Subtask) }

// formatAction renders an action in the stable one-line form of the golden
// files; the randomized test compares coordinator and model through it too.
func formatAction(a Action) string {
	switch a := a.(type) {
	case Trigger:
		return fmt.Sprintf("trigger id=%d kind=%s ts=%v", a.ID, a.Kind, since(a.Timestamp))
	case Persist:
		names := make([]string, len(a.States))
		for i, s := range a.States {
			names[i] = taskName(s.Task)
		}
		return fmt.Sprintf("persist id=%d kind=%s ts=%v states=%s", a.ID, a.Kind, since(a.Timestamp), strings.Join(names, ","))
	case NotifyComplete:
		return fmt.Sprintf("notify-complete id=%d kind=%s", a.ID, a.Kind)
	case Abort:
		sub := " cause=" + a.Cause.String()
		if a.Subsumed {
			sub = " subsumed"
		}
		return fmt.Sprintf("abort id=%d kind=%s%s: %s", a.ID, a.Kind, sub, a.Reason)
	case ProbeStorage:
		return "probe-storage"
	case StorageAlert:
		return fmt.Sprintf("storage-alert since=%v failures=%d recent=%d next-retry=%v give-up-in=%v: %s", since(a.Since), a.Failures, a.Recent, a.NextRetry, a.GiveUpIn, a.Reason)
	case StorageRecovered:
		return fmt.Sprintf("storage-recovered failures=%d after=%v", a.Failures, a.Duration)
	case FailJob:
		return "fail-job: " + a.Reason
	case Failover:
		return "failover: " + a.Reason
	case Rejected:
		return "rejected: " + a.Reason
	}
	return fmt.Sprintf("unknown action %T", a)
}

func formatActions(as []Action) string {
	if len(as) == 0 {
		return "(no actions)"
	}
	lines := make([]string, len(as))
	for i, a := range as {
		lines[i] = formatAction(a)
	}
	return strings.Join(lines, "\n")
}

func formatStats(s Stats) string {
	out := fmt.Sprintf("triggered=%d completed=%d failed=%d aborted=%d in-progress=%d last-completed=%d last-duration=%v consecutive-failures=%d",
		s.Triggered, s.Completed, s.Failed, s.Aborted, s.InProgress, s.LastCompletedID, s.LastCompletedDuration, s.ConsecutiveFailures)
	if s.FailedByCause[CauseStorage] > 0 || s.StorageFailing {
		out += fmt.Sprintf(" failed-storage=%d storage-failing=%v", s.FailedByCause[CauseStorage], s.StorageFailing)
	}
	return out
}

func formatDeadline(t time.Time, ok bool) string {
	if !ok {
		return "deadline: none"
	}
	return fmt.Sprintf("deadline: %v", since(t))
}
