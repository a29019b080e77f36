package weak

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestSnapshotsInteraction runs the scripts in testdata/snapshots.
// Commands:
//
//	new tasks=N [interval=D] [timeout=D] [first=ID]
//	running task=(I,...|all) t=D
//	down task=I t=D [reason=S]
//	finished task=I
//	eod task=I t=D
//	ack task=I id=ID t=D
//	decline task=I id=ID t=D [reason=S] [storage]
//	persisted id=ID t=D [err=S] [registration]
//	tick t=D | request t=D
//	state                    per task: running, in flight, restore point; counts; deadline
//
// Task I is TaskID{Vertex: I}; times are offsets from a fixed epoch. Each
// command prints the actions it returned. Regenerate with:
// go test ./internal/weak -run TestSnapshotsInteraction -rewrite
func TestSnapshotsInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata/snapshots", func(t *testing.T, path string) {
		var e snapEnv
		datadriven.RunTest(t, path, e.handle)
	})
}

var epoch = time.Unix(1000, 0)

func at(d time.Duration) time.Time { return epoch.Add(d) }

type snapEnv struct {
	s     *Snapshots
	tasks []checkpoint.TaskID
	up    map[checkpoint.TaskID]bool
}

func (e *snapEnv) handle(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && e.s == nil {
		d.Fatalf(t, "%s before new", d.Cmd)
	}
	now := at(coretest.Dur(t, d, "t", 0))
	switch d.Cmd {
	case "new":
		n := coretest.Int(t, d, "tasks", 1)
		e.tasks = make([]checkpoint.TaskID, n)
		for i := range e.tasks {
			e.tasks[i] = checkpoint.TaskID{Vertex: i}
		}
		e.up = map[checkpoint.TaskID]bool{}
		cfg := Config{Interval: coretest.Dur(t, d, "interval", 0), Timeout: coretest.Dur(t, d, "timeout", 0), FirstID: checkpoint.ID(coretest.Int(t, d, "first", 0))}
		e.s = NewSnapshots(cfg, e.tasks)
		return "ok\n"
	case "running":
		var out []Action
		for _, task := range e.taskArgs(t, d) {
			e.up[task] = true
			out = append(out, e.s.Step(Running{Task: task, Now: now})...)
		}
		return formatActions(out)
	case "down":
		reason := "failed"
		d.MaybeScanArgs(t, "reason", &reason)
		task := e.taskArgs(t, d)[0]
		e.up[task] = false
		return formatActions(e.s.Step(Down{Task: task, Reason: reason, Now: now}))
	case "finished":
		task := e.taskArgs(t, d)[0]
		e.up[task] = false
		return formatActions(e.s.Step(Finished{Task: task}))
	case "eod":
		return formatActions(e.s.Step(EndOfData{Task: e.taskArgs(t, d)[0], Now: now}))
	case "ack":
		task := e.taskArgs(t, d)[0]
		return formatActions(e.s.Step(Ack{Task: task, ID: checkpoint.ID(coretest.Int(t, d, "id", 0)), State: checkpoint.TaskState{Task: task}, Now: now}))
	case "decline":
		reason := "busy"
		d.MaybeScanArgs(t, "reason", &reason)
		return formatActions(e.s.Step(Decline{Task: e.taskArgs(t, d)[0], ID: checkpoint.ID(coretest.Int(t, d, "id", 0)), Reason: reason, Storage: d.HasArg("storage"), Now: now}))
	case "persisted":
		return formatActions(e.s.Step(Persisted{ID: checkpoint.ID(coretest.Int(t, d, "id", 0)), Err: coretest.Err(t, d, "err"), Registration: d.HasArg("registration"), Now: now}))
	case "tick":
		return formatActions(e.s.Step(Tick{Now: now}))
	case "request":
		return formatActions(e.s.Step(Request{Now: now}))
	case "state":
		return e.state()
	}
	d.Fatalf(t, "unknown command %s", d.Cmd)
	return ""
}

func (e *snapEnv) state() string {
	var b strings.Builder
	for _, task := range e.tasks {
		fmt.Fprintf(&b, "task %d: up=%t restore=%d", task.Vertex, e.up[task], e.s.Latest(task))
		if id, acked, ok := e.s.InFlight(task); ok {
			fmt.Fprintf(&b, " in-flight=%d", id)
			if acked {
				b.WriteString(" (persisting)")
			}
		}
		b.WriteByte('\n')
	}
	c, f := e.s.Counts()
	fmt.Fprintf(&b, "completed=%d failed=%d next=%d\n", c, f, e.s.NextID())
	if at, ok := e.s.NextDeadline(); ok {
		fmt.Fprintf(&b, "deadline: %s\n", at.Sub(epoch))
	} else {
		b.WriteString("deadline: none\n")
	}
	return b.String()
}

// taskArgs reads task=I,... or task=all; I must be one of the job's tasks.
func (e *snapEnv) taskArgs(t *testing.T, d *datadriven.TestData) []checkpoint.TaskID {
	out := coretest.Tasks(t, d, "task", e.tasks)
	for _, task := range out {
		if !slices.Contains(e.tasks, task) {
			d.Fatalf(t, "task %d/%d: want 0..%d", task.Vertex, task.Subtask, len(e.tasks)-1)
		}
	}
	return out
}

func formatActions(acts []Action) string {
	if len(acts) == 0 {
		return "(no actions)\n"
	}
	var b strings.Builder
	for _, a := range acts {
		b.WriteString(formatAction(a))
		b.WriteByte('\n')
	}
	return b.String()
}

func formatAction(a Action) string {
	switch a := a.(type) {
	case Trigger:
		return fmt.Sprintf("trigger task=%d id=%d kind=%s ts=%s", a.Task.Vertex, a.ID, a.Kind, a.Timestamp.Sub(epoch))
	case Persist:
		return fmt.Sprintf("persist task=%d id=%d kind=%s state-of=%d", a.Task.Vertex, a.ID, a.Kind, a.State.Task.Vertex)
	case Complete:
		s := fmt.Sprintf("complete task=%d id=%d kind=%s", a.Task.Vertex, a.ID, a.Kind)
		if a.Discard != 0 {
			s += fmt.Sprintf(" discard=%d", a.Discard)
		}
		return s
	case Abort:
		return fmt.Sprintf("abort task=%d id=%d kind=%s cause=%s: %s", a.Task.Vertex, a.ID, a.Kind, a.Cause, a.Reason)
	}
	return fmt.Sprintf("%T", a)
}
