package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/restart"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestInteraction runs the scripts in testdata: a Machine with fake
// TaskManagers and storage whose actions stay pending until the script
// completes them. Commands:
//
//	new [tms=N | slots=N,N,...] [interval=D] [attempts=N] [delay=D] [maxconc=N]
//	    [initial=ID [initial-path=P]] [first-own=ID] [reserve=ID] [first-attempt=N]
//	    [sweeps=manual] (shared-file sweeps stay pending; else each is done at once)
//	    [tolerable=N] (execution.checkpointing.tolerable-failed-checkpoints)
//	    [storagetimeout=D] (execution.checkpointing.storage-failure-timeout)
//	    [register] (Config.Register: a written checkpoint completes once registered)
//	    [weak] (Config.Weak: per-task snapshots, single-task failover) [timeout=D]
//	    [weak-latest=V/I:ID,...] (Config.WeakLatest: tasks' snapshots of an earlier run)
//	    one region per input line: tasks as V/I; vertex 0 is the source
//	deploy                        Start, and Prepared from a TaskManager (local)
//	running [t=V/I,...]           RUNNING from deployed executions (default: all)
//	ack cp=ID [t=V/I,...] [attempt=N]  (default: every live execution)
//	ack [t=V/I,...]               weak: each its own snapshot in flight
//	decline cp=ID t=V/I [reason=S] [storage]  (storage: the snapshot write failed)
//	eod [t=V/I,...] [attempt=N]   end of data (default: every live execution)
//	fail t=V/I [err=S] [unrecoverable] [attempt=N]
//	cancelled [t=V/I,...]         CANCELED from executions asked to cancel (default: all)
//	finish [t=V/I,...]            FINISHED (default: every live execution)
//	finishing                     the live executions whose tasks a completion told to
//	                              finish (TaskFinal, as a runtime task decides)
//	tm-lost tm=N                  the TaskManager dies with its executions and slots
//	add-tm slots=N                a TaskManager registers: SlotsOffered
//	store-done [cp=ID] [err=S]    the first pending metadata write (of cp) completes
//	register-done [cp=ID] [err=S] the first pending registration (of cp) completes
//	loaded [cp=ID|none] [err=S]   the pending LoadLatest completes (default: newest durable)
//	copied [req=N] [err=S]        the first pending savepoint copy completes
//	reserved [err=S]              the pending id reservation completes
//	swept                         the first pending sweep completes (sweeps=manual)
//	probed [err=S]                the pending storage probe completes
//	storage                       every pending storage action completes, in order
//	tick D                        advance the clock by D and Tick
//	request kind=checkpoint|savepoint|stop [target=P]
//	cancel                        Cancel (the context ended)
//	state                         job state, restarts, live executions, pending storage
//
// Each command prints the actions it returned, one per line. A violated
// invariant (see env.perform) fails the test. Regenerate with:
// go test ./internal/jobmaster -run TestInteraction -rewrite
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var e *env
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "new" {
				e = newScriptEnv(t, d)
				return "ok\n"
			}
			if e == nil {
				d.Fatalf(t, "%s before new", d.Cmd)
			}
			out := runCommand(t, e, d)
			if len(e.violation) > 0 {
				d.Fatalf(t, "invariant violated: %s", strings.Join(e.violation, "; "))
			}
			return out
		})
	})
}

func newScriptEnv(t *testing.T, d *datadriven.TestData) *env {
	cfg := defaultConfig()
	cfg.Checkpoint.Interval = coretest.Dur(t, d, "interval", 0)
	cfg.Checkpoint.MaxConcurrent = coretest.Int(t, d, "maxconc", cfg.Checkpoint.MaxConcurrent)
	cfg.Checkpoint.TolerableFailures = coretest.Int(t, d, "tolerable", 0)
	cfg.Checkpoint.StorageFailureTimeout = coretest.Dur(t, d, "storagetimeout", 0)
	attempts := coretest.Int(t, d, "attempts", 5)
	cfg.Restart = restart.NewFixedDelay(attempts, coretest.Dur(t, d, "delay", 0))
	if id := coretest.Int(t, d, "initial", 0); id > 0 {
		cfg.Initial = &RestorePoint{ID: checkpoint.ID(id), Own: true}
		if d.HasArg("initial-path") {
			d.ScanArgs(t, "initial-path", &cfg.Initial.Path)
			cfg.Initial.Own = false
		}
		cfg.FirstOwn = checkpoint.ID(id + 1)
	}
	if id := coretest.Int(t, d, "first-own", 0); id > 0 {
		cfg.FirstOwn = checkpoint.ID(id)
	}
	if d.HasArg("reserve") {
		cfg.Reserve = true
		cfg.Reserved = checkpoint.ID(coretest.Int(t, d, "reserve", 0))
	}
	cfg.FirstAttempt = coretest.Int(t, d, "first-attempt", 0)
	cfg.Register = d.HasArg("register")
	cfg.Weak = d.HasArg("weak")
	if d.HasArg("weak-latest") {
		var s string
		d.ScanArgs(t, "weak-latest", &s)
		cfg.WeakLatest = map[checkpoint.TaskID]checkpoint.ID{}
		for _, f := range strings.Split(s, ",") {
			task, id, ok := strings.Cut(f, ":")
			n, err := strconv.Atoi(id)
			if !ok || err != nil {
				d.Fatalf(t, "weak-latest: %q is not V/I:ID", f)
			}
			cfg.WeakLatest[coretest.Task(t, d, task)] = checkpoint.ID(n)
		}
	}
	cfg.Checkpoint.Timeout = coretest.Dur(t, d, "timeout", cfg.Checkpoint.Timeout)
	var regions [][]checkpoint.TaskID
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		var r []checkpoint.TaskID
		for _, f := range strings.Fields(line) {
			r = append(r, coretest.Task(t, d, f))
		}
		regions = append(regions, r)
	}
	if d.HasArg("slots") {
		var s string
		d.ScanArgs(t, "slots", &s)
		var slots []int
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				d.Fatalf(t, "slots: %v", err)
			}
			slots = append(slots, n)
		}
		e := newEnv(cfg, regions, 0, true, slots)
		e.manualSweep = d.HasArg("sweeps")
		return e
	}
	e := newEnv(cfg, regions, coretest.Int(t, d, "tms", 1), false, nil)
	e.manualSweep = d.HasArg("sweeps")
	return e
}

func runCommand(t *testing.T, e *env, d *datadriven.TestData) string {
	switch d.Cmd {
	case "deploy":
		out := e.step(Start{})
		if len(e.cfg.TaskManagers) > 0 {
			out += e.step(Prepared{})
		}
		return out
	case "start":
		return e.step(Start{})
	case "prepared":
		return e.step(Prepared{})
	case "running":
		var b strings.Builder
		for _, x := range e.execsArg(t, d, func(st ExecState) bool { return st == ExecDeploying }) {
			b.WriteString(e.report(x, ExecRunning, nil))
		}
		return squash(b.String())
	case "ack":
		id := checkpoint.ID(coretest.Int(t, d, "cp", 0))
		var b strings.Builder
		for _, x := range e.execsArg(t, d, nil) {
			if id == 0 && e.cfg.Weak {
				// ack without cp=: each its own snapshot in flight.
				if own, ok := e.weakToAck(x); ok {
					b.WriteString(e.ack(x, own))
				}
				continue
			}
			b.WriteString(e.ack(x, id))
		}
		return squash(b.String())
	case "decline":
		reason := "declined"
		d.MaybeScanArgs(t, "reason", &reason)
		x := e.execsArg(t, d, nil)[0]
		return e.step(Decline{Exec: x, ID: checkpoint.ID(coretest.Int(t, d, "cp", 0)), Reason: reason, Storage: d.HasArg("storage")})
	case "eod":
		var b strings.Builder
		for _, x := range e.execsArg(t, d, nil) {
			b.WriteString(e.step(EndOfData{Exec: x}))
		}
		return squash(b.String())
	case "fail":
		msg := "boom"
		d.MaybeScanArgs(t, "err", &msg)
		err := errors.New(msg)
		if d.HasArg("unrecoverable") {
			err = Unrecoverable(err)
		}
		x := e.execsArg(t, d, nil)[0]
		return e.report(x, ExecFailed, err)
	case "cancelled":
		var b strings.Builder
		for _, x := range e.execsArg(t, d, nil) {
			if e.cancelAsked[x] {
				b.WriteString(e.report(x, ExecCanceled, nil))
			}
		}
		return squash(b.String())
	case "finish":
		var b strings.Builder
		for _, x := range e.execsArg(t, d, nil) {
			b.WriteString(e.report(x, ExecFinished, nil))
		}
		return squash(b.String())
	case "finishing":
		var xs []string
		for _, x := range e.live(nil) {
			if e.mayFinish[x] {
				xs = append(xs, x.String())
			}
		}
		if len(xs) == 0 {
			return "finishing: none\n"
		}
		return "finishing: " + strings.Join(xs, " ") + "\n"
	case "tm-lost":
		return e.loseTM(TM(coretest.Int(t, d, "tm", 0)))
	case "add-tm":
		tm := TM(len(e.tms))
		e.tms[tm] = true
		e.slots[tm] = coretest.Int(t, d, "slots", 1)
		return e.step(SlotsOffered{})
	case "store-done", "register-done", "loaded", "copied", "reserved", "swept", "probed":
		return e.completeCmd(t, d)
	case "storage":
		var b strings.Builder
		for len(e.pending) > 0 {
			out, _ := e.complete(nil, nil, nil)
			b.WriteString(out)
		}
		return squash(b.String())
	case "tick":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			d.Fatalf(t, "tick: %v", err)
		}
		e.now = e.now.Add(dur)
		return e.step(Tick{})
	case "request":
		var kind, target string
		d.ScanArgs(t, "kind", &kind)
		d.MaybeScanArgs(t, "target", &target)
		k := map[string]RequestKind{"checkpoint": RequestCheckpoint, "savepoint": RequestSavepoint, "stop": RequestStop}[kind]
		e.nextReq++
		return fmt.Sprintf("req=%d\n", e.nextReq) + e.step(Request{Req: e.nextReq, Kind: k, Target: target})
	case "cancel":
		return e.step(Cancel{Err: context.Canceled})
	case "state":
		return e.state()
	}
	d.Fatalf(t, "unknown command %s", d.Cmd)
	return ""
}

func (e *env) completeCmd(t *testing.T, d *datadriven.TestData) string {
	err := coretest.Err(t, d, "err")
	var match func(Action) bool
	var latest *RestorePoint
	switch d.Cmd {
	case "store-done":
		id := checkpoint.ID(coretest.Int(t, d, "cp", 0))
		match = func(a Action) bool { p, ok := a.(PersistMetadata); return ok && (id == 0 || p.ID == id) }
	case "register-done":
		id := checkpoint.ID(coretest.Int(t, d, "cp", 0))
		match = func(a Action) bool { p, ok := a.(RegisterCheckpoint); return ok && (id == 0 || p.ID == id) }
	case "loaded":
		match = func(a Action) bool { _, ok := a.(LoadLatest); return ok }
		if d.HasArg("cp") {
			var s string
			d.ScanArgs(t, "cp", &s)
			if s != "none" {
				n, _ := strconv.Atoi(s)
				latest = &RestorePoint{ID: checkpoint.ID(n), Own: true}
			} else {
				latest = &RestorePoint{} // marks none below
			}
		}
	case "copied":
		req := RequestID(coretest.Int(t, d, "req", 0))
		match = func(a Action) bool { c, ok := a.(CopySavepoint); return ok && (req == 0 || c.Req == req) }
	case "reserved":
		match = func(a Action) bool { _, ok := a.(ReserveIDs); return ok }
	case "probed":
		match = func(a Action) bool { _, ok := a.(ProbeStorage); return ok }
	case "swept":
		match = sweeps
	}
	if latest != nil && latest.ID == 0 {
		// loaded cp=none: the storage holds no restorable checkpoint.
		for i, a := range e.pending {
			if _, ok := a.(LoadLatest); ok {
				e.pending = slices.Delete(e.pending, i, i+1)
				return e.step(LatestLoaded{Err: err})
			}
		}
		d.Fatalf(t, "no pending load")
	}
	out, ok := e.complete(match, err, latest)
	if !ok {
		d.Fatalf(t, "no pending %s", d.Cmd)
	}
	return out
}

// execsArg returns the current executions of the tasks in t= (with
// attempt=, that attempt), else every live execution accepted by state.
func (e *env) execsArg(t *testing.T, d *datadriven.TestData, state func(ExecState) bool) []ExecutionID {
	if !d.HasArg("t") {
		return e.live(state)
	}
	var out []ExecutionID
	for _, task := range coretest.Tasks(t, d, "t", nil) {
		x, _ := e.m.Exec(task)
		x.Attempt = coretest.Int(t, d, "attempt", x.Attempt)
		out = append(out, x)
	}
	return out
}

// state prints the job's state, live executions and pending storage.
func (e *env) state() string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s restarts=%d\n", e.m.State(), e.m.Restarts())
	if e.cfg.Weak {
		c, f := e.m.WeakSnapshots()
		fmt.Fprintf(&b, "snapshots completed=%d failed=%d\n", c, f)
	}
	for _, t := range e.cfg.Tasks {
		x, st := e.m.Exec(t)
		if e.cfg.Weak {
			fmt.Fprintf(&b, "%s %s latest=%d\n", x, st, e.m.LatestSnapshot(t))
			continue
		}
		fmt.Fprintf(&b, "%s %s\n", x, st)
	}
	for _, a := range e.pending {
		fmt.Fprintf(&b, "pending: %s\n", format(a, e.now))
	}
	return b.String()
}

// squash drops "(no actions)" lines of a multi-event command unless
// nothing happened at all.
func squash(s string) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if l != "(no actions)" && l != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		return "(no actions)\n"
	}
	return strings.Join(keep, "\n") + "\n"
}
