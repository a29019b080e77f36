package failover

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/restart"
)

var t0 = time.Unix(1000, 0)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func task(v, i int) checkpoint.TaskID { return checkpoint.TaskID{Vertex: v, Subtask: i} }

// render prints actions one per line, times relative to t0.
func render(acts []Action) string {
	var b strings.Builder
	for _, a := range acts {
		switch a := a.(type) {
		case Cancel:
			fmt.Fprintf(&b, "cancel")
			for _, t := range a.Tasks {
				fmt.Fprintf(&b, " %d/%d", t.Vertex, t.Subtask)
			}
			b.WriteString("\n")
		case ArmTimer:
			fmt.Fprintf(&b, "timer +%s\n", a.At.Sub(t0))
		default:
			fmt.Fprintf(&b, "%T %v\n", a, a)
		}
	}
	return strings.ReplaceAll(b.String(), "failover.", "")
}

type step struct {
	ev   Event
	want string
}

func run(t *testing.T, h *Handler, steps []step) {
	t.Helper()
	for i, s := range steps {
		if got := render(h.Step(s.ev)); got != s.want {
			t.Fatalf("step %d %T%+v:\ngot\n%swant\n%s", i, s.ev, s.ev, got, s.want)
		}
	}
}

// Regions of the walkthrough: 0 = keyed pipeline of 6 tasks, 1 = {3/0 4/0},
// 2 = {3/1 4/1}.
func walkthroughRegions() [][]checkpoint.TaskID {
	return [][]checkpoint.TaskID{
		tasks("0/0", "0/1", "1/0", "1/1", "2/0", "2/1"), tasks("3/0", "4/0"), tasks("3/1", "4/1"),
	}
}

func TestHandlerRegionFailover(t *testing.T) {
	h := NewHandler(walkthroughRegions(), restart.NewFixedDelay(3, time.Second))
	boom := errors.New("boom")
	run(t, h, []step{
		{TaskFailed{Task: task(4, 1), Err: boom, Now: at(0)},
			"SuspendCheckpointing {region 2 is restarting: task 4/1 failed: boom}\ncancel 3/1\ntimer +1s\n"},
		{TaskFailed{Task: task(3, 1), Err: boom, Now: at(0)}, ""}, // region 2 already failing
		{TaskTerminal{Task: task(3, 1)}, ""},                      // delay not over
		{Tick{Now: at(1)}, "Restart {[2]}\n"},
		{TaskRunning{Task: task(3, 1)}, ""},
		{TaskRunning{Task: task(4, 1)}, "ResumeCheckpointing {}\n"},
	})
	if h.State(2) != Running || h.Failed() {
		t.Fatalf("region 2 %s, failed %v", h.State(2), h.Failed())
	}
}

func TestHandlerConcurrentFailuresAndGlobal(t *testing.T) {
	h := NewHandler(walkthroughRegions(), restart.NewFixedDelay(10, 2*time.Second))
	run(t, h, []step{
		{TaskFailed{Task: task(3, 0), Err: errors.New("a"), Now: at(0)},
			"SuspendCheckpointing {region 1 is restarting: task 3/0 failed: a}\ncancel 4/0\ntimer +2s\n"},
		{TaskFailed{Task: task(1, 1), Err: errors.New("b"), Now: at(1)},
			"cancel 0/0 0/1 1/0 2/0 2/1\ntimer +3s\n"},
		{TaskTerminal{Task: task(4, 0)}, ""},
		{Tick{Now: at(2)}, "Restart {[1]}\n"},
		// Region 1 restoring, 0 canceling, 2 running: the global failure
		// fails 1 and 2 again; 0 keeps its own restart.
		{GlobalFailure{Reason: "too many failed checkpoints", Now: at(2)},
			"cancel 3/0 4/0 3/1 4/1\ntimer +4s\n"},
		{TaskTerminal{Task: task(3, 0)}, ""},
		{TaskTerminal{Task: task(4, 0)}, ""},
		{TaskTerminal{Task: task(3, 1)}, ""},
		{TaskTerminal{Task: task(4, 1)}, ""},
		{TaskTerminal{Task: task(0, 0)}, ""},
		{TaskTerminal{Task: task(0, 1)}, ""},
		{TaskTerminal{Task: task(1, 0)}, ""},
		{TaskTerminal{Task: task(2, 0)}, ""},
		{Tick{Now: at(3)}, ""}, // 0 still has 2/1 running
		{TaskTerminal{Task: task(2, 1)}, "Restart {[0]}\n"},
		{Tick{Now: at(4)}, "Restart {[1 2]}\n"},
	})
	for _, tt := range walkthroughRegions() {
		for _, x := range tt {
			want := ""
			if x == task(4, 1) {
				want = "ResumeCheckpointing {}\n"
			}
			run(t, h, []step{{TaskRunning{Task: x}, want}})
		}
	}
}

func TestHandlerTaskManagerLost(t *testing.T) {
	h := NewHandler(walkthroughRegions(), restart.NewFixedDelay(1, 0))
	run(t, h, []step{
		// The TaskManager ran 1/0 and 3/1: regions 0 and 2 fail, one
		// restart counted; its tasks are gone, the others are cancelled.
		{TaskManagerLost{Tasks: []checkpoint.TaskID{task(3, 1), task(1, 0)}, Reason: "tm-2 lost: no heartbeat for 50s", Now: at(5)},
			"SuspendCheckpointing {region 0 is restarting: tm-2 lost: no heartbeat for 50s}\ncancel 0/0 0/1 1/1 2/0 2/1 4/1\n"},
		{TaskTerminal{Task: task(4, 1)}, "Restart {[2]}\n"},
		// The one allowed restart is spent: the next failure fails the job.
		{TaskFailed{Task: task(3, 0), Err: errors.New("c"), Now: at(6)},
			"FailJob {fixed-delay: 1 attempts exhausted: task 3/0 failed: c}\n"},
		{Tick{Now: at(7)}, ""},
	})
	if !h.Failed() {
		t.Fatal("Failed() = false after FailJob")
	}
}

func TestHandlerUnrecoverable(t *testing.T) {
	h := NewHandler(walkthroughRegions(), restart.NewFixedDelay(5, 0))
	run(t, h, []step{
		{TaskFailed{Task: task(2, 0), Err: errors.New("bad config"), Unrecoverable: true, Now: at(0)},
			"FailJob {task 2/0 failed: bad config}\n"},
	})
}
