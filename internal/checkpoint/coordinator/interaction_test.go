package coordinator

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/checkpoint"
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
// Task I is TaskID{Vertex: I}; the first `sources` tasks are the sources.
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
		cfg.Interval = durArg(t, d, "interval", 0)
		cfg.Timeout = durArg(t, d, "timeout", cfg.Timeout)
		cfg.MinPause = durArg(t, d, "minpause", 0)
		cfg.MaxConcurrent = intArg(t, d, "maxconc", cfg.MaxConcurrent)
		cfg.TolerableFailures = intArg(t, d, "tolerable", 0)
		cfg.StorageFailureTimeout = durArg(t, d, "storagetimeout", 0)
		cfg.StorageMaxBackoff = durArg(t, d, "maxbackoff", 0)
		cfg.AlertEvery = durArg(t, d, "alert", 0)
		cfg.TransactionTimeout = durArg(t, d, "txntimeout", 0)
		n := intArg(t, d, "tasks", 1)
		e.tasks = make([]checkpoint.TaskID, n)
		for i := range e.tasks {
			e.tasks[i] = checkpoint.TaskID{Vertex: i}
		}
		sources := e.tasks[:intArg(t, d, "sources", 1)]
		e.c = New(cfg, e.tasks, sources, checkpoint.ID(intArg(t, d, "next", 1)), at(durArg(t, d, "t", 0)))
		return formatDeadline(e.c.NextDeadline())
	case "tick":
		return e.step(Tick{Now: at(durArg(t, d, "t", -1))})
	case "trigger":
		return e.step(TriggerRequest{Now: at(durArg(t, d, "t", -1))})
	case "eoi":
		return e.step(EndOfInput{Now: at(durArg(t, d, "t", -1))})
	case "ack":
		id := checkpoint.ID(intArg(t, d, "id", -1))
		var out []Action
		for _, task := range e.taskArgs(t, d) {
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
		return e.step(Decline{Task: e.taskArgs(t, d)[0], ID: checkpoint.ID(intArg(t, d, "id", -1)), Reason: reason, Cause: cause})
	case "probed":
		var err error
		if d.HasArg("err") {
			var s string
			d.ScanArgs(t, "err", &s)
			err = errors.New(s)
		}
		return e.step(StorageProbed{Err: err, Now: at(durArg(t, d, "t", -1))})
	case "persisted":
		var err error
		if d.HasArg("err") {
			var s string
			d.ScanArgs(t, "err", &s)
			err = errors.New(s)
		}
		return e.step(Persisted{ID: checkpoint.ID(intArg(t, d, "id", -1)), Err: err, Now: at(durArg(t, d, "t", -1))})
	case "reset":
		reason := "test"
		d.MaybeScanArgs(t, "reason", &reason)
		return e.step(Reset{Reason: reason})
	case "suspend":
		reason := "test"
		d.MaybeScanArgs(t, "reason", &reason)
		return e.step(Suspend{Reason: reason})
	case "resume":
		return e.step(Resume{Now: at(durArg(t, d, "t", -1))})
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

func (e *interactionEnv) taskArgs(t *testing.T, d *datadriven.TestData) []checkpoint.TaskID {
	arg, ok := d.Arg("task")
	if !ok {
		d.Fatalf(t, "missing task=")
	}
	if len(arg.Vals) == 1 && arg.Vals[0] == "all" {
		return e.tasks
	}
	out := make([]checkpoint.TaskID, len(arg.Vals))
	for i, v := range arg.Vals {
		n, err := strconv.Atoi(v)
		if err != nil {
			d.Fatalf(t, "task=%s: %v", v, err)
		}
		out[i] = checkpoint.TaskID{Vertex: n}
	}
	return out
}

// durArg reads a duration argument; def < 0 makes it mandatory.
func durArg(t *testing.T, d *datadriven.TestData, key string, def time.Duration) time.Duration {
	var s string
	if !d.MaybeScanArgs(t, key, &s) {
		if def < 0 {
			d.Fatalf(t, "missing %s=", key)
		}
		return def
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "%s=%s: %v", key, s, err)
	}
	return v
}

// intArg reads an integer argument; def < 0 makes it mandatory.
func intArg(t *testing.T, d *datadriven.TestData, key string, def int) int {
	v := def
	if !d.MaybeScanArgs(t, key, &v) && def < 0 {
		d.Fatalf(t, "missing %s=", key)
	}
	return v
}
