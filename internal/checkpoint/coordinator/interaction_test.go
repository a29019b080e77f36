package coordinator

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestInteraction runs the scripts in testdata. Commands:
//
//	new [interval=D] [timeout=D] [minpause=D] [maxconc=N] [tolerable=N] tasks=N [sources=N] [next=ID] [t=D]
//	    [storagetimeout=D] [maxbackoff=D] [alert=D] [txntimeout=D]
//	tick t=D | trigger t=D | eoi t=D
//	ack task=(I,...|all) id=ID
//	decline task=I id=ID [reason=S] [storage]
//	persisted id=ID [err=S] t=D
//	probed t=D [err=S]
//	reset [reason=S]
//	suspend [reason=S] | resume t=D
//	stats | deadline | pending
//
// Task I is TaskID{Vertex: I} (I/S names subtask S); the first `sources`
// tasks are the sources.
// Times are offsets from a fixed epoch. Each command prints the actions it
// returned, one per line. Regenerate with: go test ./... -rewrite
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var env interactionEnv
		datadriven.RunTest(t, path, env.handle)
	})
}

type interactionEnv struct {
	c     *Coordinator
	tasks []checkpoint.TaskID
}

func (e *interactionEnv) handle(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && e.c == nil {
		d.Fatalf(t, "%s before new", d.Cmd)
	}
	switch d.Cmd {
	case "new":
		cfg := DefaultConfig()
		cfg.Interval = coretest.Dur(t, d, "interval", 0)
		cfg.Timeout = coretest.Dur(t, d, "timeout", cfg.Timeout)
		cfg.MinPause = coretest.Dur(t, d, "minpause", 0)
		cfg.MaxConcurrent = coretest.Int(t, d, "maxconc", cfg.MaxConcurrent)
		cfg.TolerableFailures = coretest.Int(t, d, "tolerable", 0)
		cfg.StorageFailureTimeout = coretest.Dur(t, d, "storagetimeout", 0)
		cfg.StorageMaxBackoff = coretest.Dur(t, d, "maxbackoff", 0)
		cfg.AlertEvery = coretest.Dur(t, d, "alert", 0)
		cfg.TransactionTimeout = coretest.Dur(t, d, "txntimeout", 0)
		n := coretest.Int(t, d, "tasks", 1)
		e.tasks = make([]checkpoint.TaskID, n)
		for i := range e.tasks {
			e.tasks[i] = checkpoint.TaskID{Vertex: i}
		}
		sources := e.tasks[:coretest.Int(t, d, "sources", 1)]
		e.c = New(cfg, e.tasks, sources, checkpoint.ID(coretest.Int(t, d, "next", 1)), at(coretest.Dur(t, d, "t", 0)))
		return formatDeadline(e.c.NextDeadline())
	case "tick":
		return e.step(Tick{Now: at(coretest.MustDur(t, d, "t"))})
	case "trigger":
		return e.step(TriggerRequest{Now: at(coretest.MustDur(t, d, "t"))})
	case "eoi":
		return e.step(EndOfInput{Now: at(coretest.MustDur(t, d, "t"))})
	case "ack":
		id := checkpoint.ID(coretest.MustInt(t, d, "id"))
		var out []Action
		for _, task := range coretest.Tasks(t, d, "task", e.tasks) {
			out = append(out, e.c.Step(Ack{Task: task, ID: id, State: checkpoint.TaskState{Task: task}})...)
		}
		return formatActions(out)
	case "decline":
		reason := "test"
		d.MaybeScanArgs(t, "reason", &reason)
		cause := CauseDeclined
		if d.HasArg("storage") {
			cause = CauseStorage
		}
		task := coretest.Tasks(t, d, "task", e.tasks)[0]
		return e.step(Decline{Task: task, ID: checkpoint.ID(coretest.MustInt(t, d, "id")), Reason: reason, Cause: cause})
	case "probed":
		return e.step(StorageProbed{Err: coretest.Err(t, d, "err"), Now: at(coretest.MustDur(t, d, "t"))})
	case "persisted":
		return e.step(Persisted{ID: checkpoint.ID(coretest.MustInt(t, d, "id")), Err: coretest.Err(t, d, "err"), Now: at(coretest.MustDur(t, d, "t"))})
	case "reset":
		reason := "test"
		d.MaybeScanArgs(t, "reason", &reason)
		return e.step(Reset{Reason: reason})
	case "suspend":
		reason := "test"
		d.MaybeScanArgs(t, "reason", &reason)
		return e.step(Suspend{Reason: reason})
	case "resume":
		return e.step(Resume{Now: at(coretest.MustDur(t, d, "t"))})
	case "stats":
		return formatStats(e.c.Stats())
	case "deadline":
		return formatDeadline(e.c.NextDeadline())
	case "pending":
		return fmt.Sprintf("pending=%v persisting=%v", e.c.Pending(), e.c.Persisting())
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (e *interactionEnv) step(ev Event) string { return formatActions(e.c.Step(ev)) }
