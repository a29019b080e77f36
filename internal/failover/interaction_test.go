package failover

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/restart"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// t0 is the origin of test time; times print as offsets from it.
var t0 = time.Unix(1000, 0)

func task(v, i int) checkpoint.TaskID { return checkpoint.TaskID{Vertex: v, Subtask: i} }

// walkthroughRegions are the package doc's regions: 0 = the keyed pipeline
// of 6 tasks, 1 = {3/0 4/0}, 2 = {3/1 4/1}.
func walkthroughRegions() [][]checkpoint.TaskID {
	return [][]checkpoint.TaskID{
		tasks("0/0", "0/1", "1/0", "1/1", "2/0", "2/1"), tasks("3/0", "4/0"), tasks("3/1", "4/1"),
	}
}

// TestInteraction runs the scripts in testdata. Commands:
//
//	new [strategy=fixed-delay|none|failure-rate] [attempts=N] [delay=D] [interval=D]
//	    one region per input line: tasks as V/I@TM (the TaskManager it runs on)
//	fail task=V/I [err=S] [unrecoverable]
//	lost tm=NAME [reason=S]     TaskManagerLost with the TM's tasks not yet terminal
//	global [reason=S]
//	terminal [task=V/I,...]     without task: every task cancelled and not yet terminal
//	running [task=V/I,...|region=N]  without either: every task deployed and not yet running
//	tick +D                     advance the clock by D and send Tick
//	state                       region states, restarts, failed
//
// Each command prints the actions it returned, one per line. Placement is
// static: a restarted task runs on the TaskManager of the same name (a
// TaskManager that came back). Regenerate with: go test ./internal/failover
// -run TestInteraction -rewrite
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := &interactionEnv{}
		datadriven.RunTest(t, path, e.handle)
	})
}

// interactionEnv plays the JobMaster: it performs the handler's actions on
// its own view of the tasks, so `terminal` and `running` answer what was
// asked for.
type interactionEnv struct {
	h       *Handler
	regions [][]checkpoint.TaskID
	tm      map[checkpoint.TaskID]string
	status  map[checkpoint.TaskID]string // running, canceling, terminal, deploying
	now     time.Time
}

func (e *interactionEnv) handle(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && e.h == nil {
		d.Fatalf(t, "%s before new", d.Cmd)
	}
	switch d.Cmd {
	case "new":
		return e.newHandler(t, d)
	case "fail":
		err := "boom"
		d.MaybeScanArgs(t, "err", &err)
		tt := e.taskArg(t, d)
		e.status[tt] = "terminal"
		return e.step(TaskFailed{Task: tt, Err: errors.New(err), Unrecoverable: d.HasArg("unrecoverable"), Now: e.now})
	case "lost":
		var name string
		d.ScanArgs(t, "tm", &name)
		reason := fmt.Sprintf("TaskManager %s lost: no heartbeat for 50s", name)
		d.MaybeScanArgs(t, "reason", &reason)
		var gone []checkpoint.TaskID
		for _, tt := range e.all() {
			if e.tm[tt] == name && e.status[tt] != "terminal" {
				gone = append(gone, tt)
				e.status[tt] = "terminal"
			}
		}
		return e.step(TaskManagerLost{Tasks: gone, Reason: reason, Now: e.now})
	case "global":
		reason := "too many failed checkpoints"
		d.MaybeScanArgs(t, "reason", &reason)
		return e.step(GlobalFailure{Reason: reason, Now: e.now})
	case "terminal":
		ts := e.tasksArg(t, d, "canceling")
		var out []string
		for _, tt := range ts {
			e.status[tt] = "terminal"
			if s := e.step(TaskTerminal{Task: tt}); s != "" {
				out = append(out, s)
			}
		}
		return strings.Join(out, "\n")
	case "running":
		ts := e.tasksArg(t, d, "deploying")
		var out []string
		for _, tt := range ts {
			e.status[tt] = "running"
			if s := e.step(TaskRunning{Task: tt}); s != "" {
				out = append(out, s)
			}
		}
		return strings.Join(out, "\n")
	case "tick":
		if len(d.CmdArgs) != 1 || !strings.HasPrefix(d.CmdArgs[0].Key, "+") {
			d.Fatalf(t, "tick +DURATION")
		}
		dur, err := time.ParseDuration(d.CmdArgs[0].Key[1:])
		if err != nil {
			d.Fatalf(t, "tick %s: %v", d.CmdArgs[0].Key, err)
		}
		e.now = e.now.Add(dur)
		return e.step(Tick{Now: e.now})
	case "state":
		var b strings.Builder
		for r := range e.regions {
			fmt.Fprintf(&b, "region %d %s\n", r, e.h.State(r))
		}
		fmt.Fprintf(&b, "restarts=%d failed=%v", e.h.Restarts(), e.h.Failed())
		return b.String()
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (e *interactionEnv) newHandler(t *testing.T, d *datadriven.TestData) string {
	strategy := "fixed-delay"
	d.MaybeScanArgs(t, "strategy", &strategy)
	attempts := 3
	d.MaybeScanArgs(t, "attempts", &attempts)
	delay, interval := coretest.Dur(t, d, "delay", 0), coretest.Dur(t, d, "interval", time.Minute)
	var s restart.Strategy
	switch strategy {
	case "fixed-delay":
		s = restart.NewFixedDelay(attempts, delay)
	case "none":
		s = restart.NewNone()
	case "failure-rate":
		s = restart.NewFailureRate(attempts, interval, delay)
	default:
		d.Fatalf(t, "unknown strategy %q", strategy)
	}
	e.regions, e.tm, e.status, e.now = nil, map[checkpoint.TaskID]string{}, map[checkpoint.TaskID]string{}, t0
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		var region []checkpoint.TaskID
		for _, f := range strings.Fields(line) {
			id, tm, ok := strings.Cut(f, "@")
			if !ok {
				d.Fatalf(t, "%q: want V/I@TM", f)
			}
			tt := coretest.Task(t, d, id)
			region = append(region, tt)
			e.tm[tt], e.status[tt] = tm, "running"
		}
		e.regions = append(e.regions, region)
	}
	e.h = NewHandler(e.regions, s)
	return ""
}

// step feeds ev and performs the actions on the env's view of the tasks.
func (e *interactionEnv) step(ev Event) string {
	acts := e.h.Step(ev)
	for _, a := range acts {
		switch a := a.(type) {
		case Cancel:
			for _, tt := range a.Tasks {
				e.status[tt] = "canceling"
			}
		case Restart:
			for _, r := range a.Regions {
				for _, tt := range e.regions[r] {
					e.status[tt] = "deploying"
				}
			}
		}
	}
	return formatActions(acts)
}

func (e *interactionEnv) all() []checkpoint.TaskID { return slices.Concat(e.regions...) }

func (e *interactionEnv) taskArg(t *testing.T, d *datadriven.TestData) checkpoint.TaskID {
	return coretest.Tasks(t, d, "task", nil)[0]
}

// tasksArg reads task=V/I,... or region=N; without either it returns every
// task in status def.
func (e *interactionEnv) tasksArg(t *testing.T, d *datadriven.TestData, def string) []checkpoint.TaskID {
	if d.HasArg("task") {
		return coretest.Tasks(t, d, "task", nil)
	}
	if d.HasArg("region") {
		var r int
		d.ScanArgs(t, "region", &r)
		return e.regions[r]
	}
	var out []checkpoint.TaskID
	for _, tt := range e.all() {
		if e.status[tt] == def {
			out = append(out, tt)
		}
	}
	return out
}

// formatActions renders actions one per line, times relative to t0; the
// random test compares handler and model through it too.
func formatActions(acts []Action) string {
	lines := make([]string, len(acts))
	for i, a := range acts {
		lines[i] = formatAction(a)
	}
	return strings.Join(lines, "\n")
}

func formatAction(a Action) string {
	switch a := a.(type) {
	case Cancel:
		return "cancel " + taskList(a.Tasks)
	case SuspendCheckpointing:
		return "suspend-checkpointing: " + a.Reason
	case ResumeCheckpointing:
		return "resume-checkpointing"
	case Restart:
		return fmt.Sprintf("restart regions=%v", a.Regions)
	case FailJob:
		return "fail-job: " + a.Cause.Error()
	case ArmTimer:
		return fmt.Sprintf("arm-timer +%v", a.At.Sub(t0))
	}
	return fmt.Sprintf("unknown action %T", a)
}

func taskList(ts []checkpoint.TaskID) string {
	s := make([]string, len(ts))
	for i, tt := range ts {
		s[i] = fmt.Sprintf("%d/%d", tt.Vertex, tt.Subtask)
	}
	return strings.Join(s, " ")
}
