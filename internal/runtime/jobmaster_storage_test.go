package runtime

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
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
	"github.com/weirstream/weir/internal/vfs"
)

// slowFS is checkpoint storage whose every write (create, rename, remove,
// mkdir, sync) blocks for delay once on is set, or until release closes.
type slowFS struct {
	vfs.FS
	on      atomic.Bool
	delay   time.Duration
	release chan struct{}
}

func (f *slowFS) block() {
	if f.on.Load() {
		select {
		case <-f.release:
		case <-time.After(f.delay):
		}
	}
}

func (f *slowFS) Create(name string) (vfs.File, error) { f.block(); return f.FS.Create(name) }
func (f *slowFS) MkdirAll(name string, perm fs.FileMode) error {
	f.block()
	return f.FS.MkdirAll(name, perm)
}
func (f *slowFS) Rename(o, n string) error    { f.block(); return f.FS.Rename(o, n) }
func (f *slowFS) Remove(name string) error    { f.block(); return f.FS.Remove(name) }
func (f *slowFS) RemoveAll(name string) error { f.block(); return f.FS.RemoveAll(name) }
func (f *slowFS) SyncDir(name string) error   { f.block(); return f.FS.SyncDir(name) }

// signalTM is a TaskManagerGateway that hands every call to the test as
// it happens, from the JobMaster's goroutine.
type signalTM struct{ calls chan string }

func (s *signalTM) ID() deployment.ResourceID                                  { return "tm-s" }
func (s *signalTM) PrepareJob(deployment.JobSpec, string)                      { s.calls <- "prepare" }
func (s *signalTM) ReleaseJob(string)                                          { s.calls <- "release" }
func (s *signalTM) Deploy(deployment.Deployment)                               { s.calls <- "deploy" }
func (s *signalTM) Cancel(string, []deployment.ExecutionID)                    { s.calls <- "cancel" }
func (s *signalTM) Trigger(string, deployment.ExecutionID, checkpoint.Barrier) { s.calls <- "trigger" }
func (s *signalTM) NotifyComplete(string, checkpoint.ID, checkpoint.Kind)      { s.calls <- "complete" }
func (s *signalTM) NotifyAborted(string, checkpoint.ID)                        { s.calls <- "aborted" }
func (s *signalTM) StopSources(string, []deployment.ExecutionID)               { s.calls <- "stop" }
func (s *signalTM) WeakPeers(string, deployment.WeakPeersUpdate)               {}

// waitCall waits for a call starting with prefix, skipping others.
func (s *signalTM) waitCall(t *testing.T, prefix string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case c := <-s.calls:
			if strings.HasPrefix(c, prefix) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s call", prefix)
		}
	}
}

// storageLatencies are how long the JobMaster took to handle reports and
// requests, in one run of runBlockedStorage.
type storageLatencies struct {
	request, ack, failure, rejected time.Duration
}

func (l storageLatencies) String() string {
	return fmt.Sprintf("checkpoint request answered %v, ack handled %v, failure to cancel %v, request answered while restarting %v", l.request, l.ack, l.failure, l.rejected)
}

func (l storageLatencies) max() time.Duration {
	return max(l.request, l.ack, l.failure, l.rejected)
}

// runBlockedStorage runs a JobMaster's loop over storage whose writes
// block for delay from the first checkpoint's metadata write on (blocked
// false: never), and measures how long it takes to handle what comes
// meanwhile: a checkpoint request, acks of a second checkpoint, a task
// failure (whose abort has a checkpoint folder discarded and whose
// restart loads the newest checkpoint) and a request during the restart.
func runBlockedStorage(t *testing.T, blocked bool, delay time.Duration) storageLatencies {
	fsys := &slowFS{FS: vfs.OS{}, delay: delay, release: make(chan struct{})}
	store, err := storage.Open(t.TempDir(), "j", storage.WithFS(fsys))
	if err != nil {
		t.Fatal(err)
	}
	// src(2) -hash-> agg(2) beside other(1): two regions, so the job
	// runs on (and takes requests) while the first restarts.
	jg, err := dataflow.BuildJobGraph(dataflowtest.Graph(dataflowtest.Node("src", 2), dataflowtest.Node("agg", 2, dataflowtest.Hash(0)), dataflowtest.Node("other", 1)), 8)
	if err != nil {
		t.Fatal(err)
	}
	cfg := JobConfig{JobName: "j", CheckpointDir: "unused", NumRetained: 1, Restart: restart.NewFixedDelay(5, 0)}
	cfg.Checkpoint.MaxConcurrent = 2
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	jm := newJobMaster(cfg, jg, store)
	if err := jm.initShared(context.Background()); err != nil {
		t.Fatal(err)
	}
	jm.start(nil, 1)
	tm := &signalTM{calls: make(chan string, 1000)}
	jm.place = newLocalPlacement([]deployment.TaskManagerGateway{tm})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- jm.run(ctx) }()
	put := func(ev jobmaster.Event) { jm.in.put(jmEvent{ev: ev}) }
	x := func(v, s int) deployment.ExecutionID { return deployment.ExecutionID{Task: tid(v, s)} }
	tasks := []deployment.ExecutionID{x(0, 0), x(0, 1), x(1, 0), x(1, 1), x(2, 0)}
	defer func() {
		// Cancel the job: its executions (either attempt) report
		// CANCELED, and the blocked writes end.
		cancel()
		for _, e := range tasks {
			for a := range 2 {
				put(jobmaster.StateChanged{Exec: deployment.ExecutionID{Task: e.Task, Attempt: a}, State: deployment.ExecCanceled})
			}
		}
		close(fsys.release)
		if err := <-done; err != context.Canceled {
			t.Errorf("run = %v, want context.Canceled", err)
		}
	}()
	st, ctl := cfg.Status, cfg.Control

	tm.waitCall(t, "prepare")
	put(jobmaster.Prepared{})
	tm.waitCall(t, "deploy")
	for _, e := range tasks {
		put(jobmaster.StateChanged{Exec: e, State: deployment.ExecRunning})
	}
	for st.State() != jobstatus.StateRunning {
		time.Sleep(time.Millisecond)
	}
	if _, err := ctl.TriggerCheckpoint(ctx); err != nil {
		t.Fatal(err)
	}
	tm.waitCall(t, "trigger")
	fsys.on.Store(blocked)
	for _, e := range tasks {
		put(jobmaster.Ack{Exec: e, ID: 1, State: checkpoint.TaskState{Task: e.Task}})
	}
	// Checkpoint 1's metadata write is now blocked on the worker.
	var l storageLatencies
	t0 := time.Now()
	id, err := ctl.TriggerCheckpoint(ctx)
	if err != nil || id != 2 {
		t.Fatalf("checkpoint request: %d, %v", id, err)
	}
	l.request = time.Since(t0)
	t0 = time.Now()
	for _, e := range tasks[:3] {
		put(jobmaster.Ack{Exec: e, ID: 2, State: checkpoint.TaskState{Task: e.Task}})
	}
	for acked(st, 2) < 3 {
		time.Sleep(50 * time.Microsecond)
		if time.Since(t0) > 5*time.Second {
			t.Fatalf("acks not counted: %+v", st.Checkpoints(time.Now()))
		}
	}
	l.ack = time.Since(t0)
	// A failure of 1/1: the suspension aborts checkpoint 2 (its folder is
	// discarded on the worker), the region's other tasks are cancelled at
	// once.
	t0 = time.Now()
	put(jobmaster.StateChanged{Exec: x(1, 1), State: deployment.ExecFailed, Err: fmt.Errorf("boom")})
	tm.waitCall(t, "cancel")
	l.failure = time.Since(t0)
	for _, e := range tasks[:3] {
		put(jobmaster.StateChanged{Exec: e, State: deployment.ExecCanceled})
	}
	time.Sleep(10 * time.Millisecond) // the restart asked for LoadLatest
	// The restart waits for the write and then for LoadLatest; the loop
	// answers meanwhile.
	t0 = time.Now()
	if _, err := ctl.TriggerCheckpoint(ctx); err == nil || !strings.Contains(err.Error(), "suspended") {
		t.Fatalf("checkpoint request while restarting: %v, want a refusal", err)
	}
	l.rejected = time.Since(t0)
	return l
}

// acked returns how many subtasks acknowledged checkpoint id.
func acked(st *jobstatus.JobStatus, id checkpoint.ID) int {
	for _, c := range st.Checkpoints(time.Now()) {
		if c.ID == id {
			return c.Acknowledged
		}
	}
	return 0
}

// TestBlockedStorageDoesNotDelayTheLoop: with checkpoint storage whose
// every write blocks for 10s, the JobMaster still answers requests, counts
// acks and cancels a failed region within milliseconds, as with storage
// that does not block: storage actions run on the worker, never on the
// loop. The figures are logged (go test -v -run BlockedStorage).
func TestBlockedStorageDoesNotDelayTheLoop(t *testing.T) {
	const delay = 10 * time.Second
	normal := runBlockedStorage(t, false, delay)
	slow := runBlockedStorage(t, true, delay)
	t.Logf("normal storage:  %s", normal)
	t.Logf("blocked storage: %s", slow)
	if slow.max() > time.Second {
		t.Fatalf("with blocked storage the loop took %v (of a %v write): %s", slow.max(), delay, slow)
	}
}
