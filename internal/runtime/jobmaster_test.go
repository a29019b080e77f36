package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/dataflow/dataflowtest"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobmaster"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/restart"
)

// fakeTM is a TaskManagerGateway that records the JobMaster's calls.
type fakeTM struct {
	id    deployment.ResourceID // "tm-f" when empty
	calls []string
}

func (f *fakeTM) ID() deployment.ResourceID {
	if f.id == "" {
		return "tm-f"
	}
	return f.id
}
func (f *fakeTM) PrepareJob(spec deployment.JobSpec, _ string) { f.add("prepare %s", spec.Name) }
func (f *fakeTM) ReleaseJob(job string)                        { f.add("release %s", job) }
func (f *fakeTM) Deploy(d deployment.Deployment) {
	var execs []string
	for _, td := range d.Tasks {
		execs = append(execs, td.Exec.String())
	}
	f.add("deploy %s", strings.Join(execs, " "))
}
func (f *fakeTM) Cancel(job string, execs []deployment.ExecutionID) { f.add("cancel %v", execs) }
func (f *fakeTM) Trigger(job string, x deployment.ExecutionID, b checkpoint.Barrier) {
	f.add("trigger %s %d %s", x, b.ID, b.Kind)
}
func (f *fakeTM) NotifyComplete(job string, id checkpoint.ID, _ checkpoint.Kind) {
	f.add("complete %d", id)
}
func (f *fakeTM) NotifyAborted(job string, id checkpoint.ID)             { f.add("aborted %d", id) }
func (f *fakeTM) StopSources(job string, execs []deployment.ExecutionID) { f.add("stop %v", execs) }
func (f *fakeTM) WeakPeers(job string, u deployment.WeakPeersUpdate)     { f.add("weak-peers %v", u) }
func (f *fakeTM) add(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// take returns the calls since the last take.
func (f *fakeTM) take() string {
	s := strings.Join(f.calls, "\n")
	f.calls = nil
	return s
}

// newTestJobMaster returns a JobMaster of src(2) -hash-> agg(2), one
// region, with a fake TaskManager, no periodic checkpoints and restarts
// without delay. The test drives it by calling handle and runFailover, as
// its loop does, on the test goroutine.
func newTestJobMaster(t *testing.T) (*JobMaster, *fakeTM) {
	t.Helper()
	return newTestJobMasterOf(t, twoStageGraph(t))
}

func newTestJobMasterOf(t *testing.T, jg *dataflow.JobGraph) (*JobMaster, *fakeTM) {
	t.Helper()
	store, err := storage.Open(t.TempDir(), "j")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	cfg := JobConfig{JobName: "j", CheckpointDir: "unused", NumRetained: 1, Restart: restart.NewFixedDelay(5, 0), Now: func() time.Time { return now }}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	jm := newJobMaster(cfg, jg, store)
	jm.start(nil, 1)
	tm := &fakeTM{}
	jm.place = newLocalPlacement([]deployment.TaskManagerGateway{tm})
	startTestJobMaster(t, jm)
	wantCalls(t, tm, "prepare j")
	return jm, tm
}

// startTestJobMaster does what run does before its loop: the test then
// drives the JobMaster with step and settle on its own goroutine.
func startTestJobMaster(t *testing.T, jm *JobMaster) {
	t.Helper()
	jm.desc = "desc"
	jm.m = jm.newMachine()
	jm.worker = startStoreWorker()
	t.Cleanup(jm.worker.stop)
	step(jm, jobmaster.Start{})
}

// step hands the JobMaster events as its loop would.
func step(jm *JobMaster, evs ...jobmaster.Event) {
	for _, ev := range evs {
		jm.receive(jmEvent{ev: ev})
	}
}

// settle lets storage complete: it waits for the worker and hands the
// JobMaster the results, until nothing is left.
func settle(jm *JobMaster) {
	for {
		jm.worker.drain()
		evs := jm.in.take(nil)
		if len(evs) == 0 {
			return
		}
		for _, ev := range evs {
			jm.receive(ev)
		}
	}
}

func execState(v, s, attempt int, st deployment.ExecState) jobmaster.Event {
	return jobmaster.StateChanged{Exec: deployment.ExecutionID{Task: tid(v, s), Attempt: attempt}, State: st}
}

func eod(v, s, attempt int) jobmaster.Event {
	return jobmaster.EndOfData{Exec: deployment.ExecutionID{Task: tid(v, s), Attempt: attempt}}
}

func wantCalls(t *testing.T, tm *fakeTM, want ...string) {
	t.Helper()
	if got := tm.take(); got != strings.Join(want, "\n") {
		t.Fatalf("calls\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

// TestJobMasterRegionRestart drives a JobMaster through a task failure:
// the region's other executions are cancelled, reports of the old attempt
// are dropped (here: end of data of tasks that are being cancelled, which
// must not count towards the final checkpoint), the region is redeployed
// with the next attempt, and the final checkpoint is triggered only once
// every restarted task reached the end of its input.
func TestJobMasterRegionRestart(t *testing.T) {
	jm, tm := newTestJobMaster(t)
	step(jm, jobmaster.Prepared{})
	wantCalls(t, tm, "deploy 0/0#0 0/1#0 1/0#0 1/1#0")
	step(jm, execState(0, 0, 0, deployment.ExecRunning), execState(0, 1, 0, deployment.ExecRunning), execState(1, 0, 0, deployment.ExecRunning), execState(1, 1, 0, deployment.ExecRunning))
	wantCalls(t, tm)
	if got := jm.cfg.Status.State(); got != jobstatus.StateRunning {
		t.Fatalf("state %s, want RUNNING", got)
	}
	// agg/1 reached the end of its input, then failed.
	step(jm, eod(1, 1, 0), execState(1, 1, 0, deployment.ExecFailed))
	wantCalls(t, tm, "cancel [0/0#0 0/1#0 1/0#0]")
	if got := jm.cfg.Status.State(); got != jobstatus.StateRestarting {
		t.Fatalf("state %s while the only region restarts, want RESTARTING", got)
	}
	// The others run to the end before they notice the cancel.
	step(jm, eod(0, 0, 0), eod(0, 1, 0), eod(1, 0, 0))
	wantCalls(t, tm)
	step(jm, execState(0, 0, 0, deployment.ExecCanceled), execState(0, 1, 0, deployment.ExecCanceled))
	wantCalls(t, tm)
	step(jm, execState(1, 0, 0, deployment.ExecCanceled))
	settle(jm) // the restart's LoadLatest
	wantCalls(t, tm, "deploy 0/0#1 0/1#1 1/0#1 1/1#1")
	// Late reports of attempt 0 are dropped.
	step(jm, execState(1, 0, 0, deployment.ExecFailed), eod(1, 0, 0))
	step(jm, execState(0, 0, 1, deployment.ExecRunning), execState(0, 1, 1, deployment.ExecRunning), execState(1, 0, 1, deployment.ExecRunning), execState(1, 1, 1, deployment.ExecRunning))
	wantCalls(t, tm)
	if got := jm.cfg.Status.Restarts.Load(); got != 1 {
		t.Fatalf("%d restarts, want 1", got)
	}
	step(jm, eod(0, 0, 1), eod(0, 1, 1), eod(1, 0, 1))
	wantCalls(t, tm)
	step(jm, eod(1, 1, 1))
	wantCalls(t, tm, "trigger 0/0#1 1 final", "trigger 0/1#1 1 final")
}

// TestJobMasterFailureAfterFinalCheckpoint: in a job of two regions
// (src->sink at parallelism 2, forward only), the final checkpoint
// completed and one task fails committing before the other reported
// FINISHED. The other region's task will finish and could never
// acknowledge the restarted region's final checkpoint, so every region
// restarts, not only the failed one.
func TestJobMasterFailureAfterFinalCheckpoint(t *testing.T) {
	jg, err := dataflow.BuildJobGraph(dataflowtest.Graph(dataflowtest.Node("src", 2), dataflowtest.Node("sink", 2, dataflowtest.Fwd(0))), 8)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(Regions(jg)); n != 2 {
		t.Fatalf("%d regions, want 2", n)
	}
	jm, tm := newTestJobMasterOf(t, jg)
	if err := jm.initShared(context.Background()); err != nil {
		t.Fatal(err)
	}
	step(jm, jobmaster.Prepared{})
	wantCalls(t, tm, "deploy 0/0#0 0/1#0")
	step(jm, execState(0, 0, 0, deployment.ExecRunning), execState(0, 1, 0, deployment.ExecRunning), eod(0, 0, 0), eod(0, 1, 0))
	wantCalls(t, tm, "trigger 0/0#0 1 final", "trigger 0/1#0 1 final")
	ack := func(s int) jobmaster.Event {
		return jobmaster.Ack{Exec: deployment.ExecutionID{Task: tid(0, s)}, ID: 1, State: checkpoint.TaskState{Task: tid(0, s)}}
	}
	step(jm, ack(0), ack(1))
	// The storage worker reports through the inbox.
	settle(jm)
	wantCalls(t, tm, "complete 1")
	step(jm, execState(0, 0, 0, deployment.ExecFailed))
	settle(jm)
	// Region 0 has stopped and restarts at once; region 1 once its task
	// stopped. 0/0#1 reaching the end of its input early must not take the
	// final checkpoint without 0/1#1.
	wantCalls(t, tm, "cancel [0/1#0]", "deploy 0/0#1")
	step(jm, execState(0, 0, 1, deployment.ExecRunning), eod(0, 0, 1))
	wantCalls(t, tm)
	step(jm, execState(0, 1, 0, deployment.ExecFinished))
	settle(jm)
	wantCalls(t, tm, "deploy 0/1#1")
	step(jm, execState(0, 1, 1, deployment.ExecRunning))
	wantCalls(t, tm)
	step(jm, eod(0, 1, 1))
	wantCalls(t, tm, "trigger 0/0#1 2 final", "trigger 0/1#1 2 final")
}

// TestJobMasterFinalCompletesWhileRegionRestarts: the final checkpoint's
// metadata write is in flight when a task of region 0 fails. It completes
// during the suspension, but the other region is not told (its task would
// finish and never ack the restarted region's final checkpoint); region 0
// restarts alone, from that final checkpoint, and the next final
// checkpoint is notified to both.
func TestJobMasterFinalCompletesWhileRegionRestarts(t *testing.T) {
	jg, err := dataflow.BuildJobGraph(dataflowtest.Graph(dataflowtest.Node("src", 2), dataflowtest.Node("sink", 2, dataflowtest.Fwd(0))), 8)
	if err != nil {
		t.Fatal(err)
	}
	jm, tm := newTestJobMasterOf(t, jg)
	if err := jm.initShared(context.Background()); err != nil {
		t.Fatal(err)
	}
	step(jm, jobmaster.Prepared{})
	wantCalls(t, tm, "deploy 0/0#0 0/1#0")
	step(jm, execState(0, 0, 0, deployment.ExecRunning), execState(0, 1, 0, deployment.ExecRunning), eod(0, 0, 0), eod(0, 1, 0))
	wantCalls(t, tm, "trigger 0/0#0 1 final", "trigger 0/1#0 1 final")
	ack := func(s, attempt int, id checkpoint.ID) jobmaster.Event {
		return jobmaster.Ack{Exec: deployment.ExecutionID{Task: tid(0, s), Attempt: attempt}, ID: id, State: checkpoint.TaskState{Task: tid(0, s)}}
	}
	step(jm, ack(0, 0, 1), ack(1, 0, 1)) // persisting now
	step(jm, execState(0, 0, 0, deployment.ExecFailed))
	wantCalls(t, tm) // region 0 stopped, but the restart waits for the write
	settle(jm)       // the write completes, then the restart's LoadLatest
	wantCalls(t, tm, "deploy 0/0#1")
	step(jm, execState(0, 0, 1, deployment.ExecRunning), eod(0, 0, 1))
	wantCalls(t, tm, "trigger 0/0#1 2 final", "trigger 0/1#0 2 final")
	step(jm, ack(0, 1, 2), ack(1, 0, 2))
	settle(jm)
	wantCalls(t, tm, "complete 2")
}
