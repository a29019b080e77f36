package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobmaster"
	"github.com/weirstream/weir/internal/restart"
)

// callLog records, in order, what the registry, the TaskManagers and the
// crash hook saw: the registry runs on the storage worker, the
// TaskManagers on the JobMaster's loop.
type callLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *callLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// take returns the lines since the last take.
func (l *callLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// memRegistry is an in-memory CheckpointRegistry; refuse makes the next
// Register calls fail.
type memRegistry struct {
	log    *callLog
	mu     sync.Mutex
	ids    map[checkpoint.ID]string
	refuse int
}

func (r *memRegistry) Register(_ context.Context, id checkpoint.ID, path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse > 0 {
		r.refuse--
		r.log.add("register %d refused", id)
		return errors.New("not the leader")
	}
	r.ids[id] = path
	r.log.add("register %d", id)
	return nil
}

func (r *memRegistry) Registered(context.Context) ([]checkpoint.ID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []checkpoint.ID
	for id := range r.ids {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

func (r *memRegistry) Unregister(_ context.Context, ids []checkpoint.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		delete(r.ids, id)
	}
	r.log.add("unregister %v", ids)
	return nil
}

// logTM is a TaskManagerGateway that writes its checkpoint calls and
// deployments to a callLog.
type logTM struct {
	fakeTM
	name string
	log  *callLog
}

func (g *logTM) ID() deployment.ResourceID { return deployment.ResourceID(g.name) }
func (g *logTM) Deploy(d deployment.Deployment) {
	restore := "none"
	if d.Restore != nil {
		restore = fmt.Sprint(d.Restore.ID)
	}
	g.log.add("%s deploy restore=%s", g.name, restore)
}
func (g *logTM) NotifyComplete(_ string, id checkpoint.ID, _ checkpoint.Kind) {
	g.log.add("%s complete %d", g.name, id)
}
func (g *logTM) NotifyAborted(_ string, id checkpoint.ID) { g.log.add("%s aborted %d", g.name, id) }

// syncBuffer is a log destination written by the worker and the loop.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newRegistryJobMaster returns a JobMaster of src(2) -hash-> agg(2) on
// two TaskManagers, registering its checkpoints in a memRegistry, started
// and driven on the test goroutine (step, settle).
func newRegistryJobMaster(t *testing.T, dir string) (*JobMaster, *memRegistry, *callLog, *syncBuffer) {
	t.Helper()
	store, err := storage.Open(dir, "j")
	if err != nil {
		t.Fatal(err)
	}
	calls := &callLog{}
	reg := &memRegistry{log: calls, ids: map[checkpoint.ID]string{}}
	logs := &syncBuffer{}
	now := time.Unix(1000, 0)
	cfg := JobConfig{
		JobName: "j", CheckpointDir: dir, NumRetained: 1, Restart: restart.NewFixedDelay(5, 0),
		Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(logs, nil)),
	}
	cfg.Checkpoint.TolerableFailures = 1
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	cfg.registry = reg
	cfg.crashPoint = func(name string) { calls.add("crash %s", name) }
	jm := newJobMaster(cfg, twoStageGraph(t), store)
	if err := jm.initShared(context.Background()); err != nil {
		t.Fatal(err)
	}
	jm.start(nil, 1)
	jm.place = newLocalPlacement([]deployment.TaskManagerGateway{&logTM{name: "tm0", log: calls}, &logTM{name: "tm1", log: calls}})
	startTestJobMaster(t, jm)
	return jm, reg, calls, logs
}

// runningAll reports RUNNING for every subtask of attempt a.
func runningAll(jm *JobMaster, a int) {
	step(jm, execState(0, 0, a, deployment.ExecRunning), execState(0, 1, a, deployment.ExecRunning), execState(1, 0, a, deployment.ExecRunning), execState(1, 1, a, deployment.ExecRunning))
}

// checkpointAll requests a checkpoint, has every subtask of attempt a ack
// it and lets storage (and the registry) complete; it returns the id.
func checkpointAll(t *testing.T, jm *JobMaster, a int) checkpoint.ID {
	t.Helper()
	reply := make(chan triggerReply, 1)
	jm.submit(triggerRequest{kind: reqCheckpoint, reply: reply})
	r := <-reply
	if r.err != nil {
		t.Fatalf("checkpoint request: %v", r.err)
	}
	for _, x := range []checkpoint.TaskID{tid(0, 0), tid(0, 1), tid(1, 0), tid(1, 1)} {
		step(jm, jobmaster.Ack{Exec: deployment.ExecutionID{Task: x, Attempt: a}, ID: r.id, State: checkpoint.TaskState{Task: x}})
	}
	settle(jm)
	return r.id
}

func wantLines(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func chkDirs(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "j", "chk-*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range m {
		out = append(out, filepath.Base(p))
	}
	slices.Sort(out)
	return out
}

// TestJobMasterRegistersCheckpoints: with a CheckpointRegistry, a
// checkpoint is registered after its metadata is written and told to the
// TaskManagers only after that; retention unregisters a checkpoint before
// it removes its files; a refused registration fails that checkpoint (its
// files discarded, nobody told it completed) and the next completes; a
// restart restores the newest registered checkpoint, never a newer
// metadata nobody registered.
func TestJobMasterRegistersCheckpoints(t *testing.T) {
	dir := t.TempDir()
	jm, reg, calls, logs := newRegistryJobMaster(t, dir)
	step(jm, jobmaster.Prepared{})
	wantLines(t, "deploy", calls.take(), "tm0 deploy restore=none", "tm1 deploy restore=none")
	runningAll(jm, 0)

	// Metadata, registration, then the notifications (the crash points in
	// between).
	if id := checkpointAll(t, jm, 0); id != 1 {
		t.Fatalf("checkpoint %d, want 1", id)
	}
	wantLines(t, "checkpoint 1", calls.take(),
		"crash after-metadata", "register 1", "crash after-register",
		"tm0 complete 1", "crash mid-notify", "tm1 complete 1")

	// Retention (1 retained) unregisters checkpoint 1 before removing it.
	checkpointAll(t, jm, 0)
	wantLines(t, "checkpoint 2", calls.take(),
		"crash after-metadata", "register 2", "crash after-register",
		"tm0 complete 2", "crash mid-notify", "tm1 complete 2",
		"unregister [1]")
	if got := chkDirs(t, dir); !slices.Equal(got, []string{"chk-2"}) {
		t.Fatalf("checkpoint folders %v, want [chk-2]", got)
	}

	// A refused registration fails checkpoint 3: aborted, unregistered (it
	// may have registered after all) and discarded.
	reg.mu.Lock()
	reg.refuse = 1
	reg.mu.Unlock()
	checkpointAll(t, jm, 0)
	wantLines(t, "checkpoint 3", calls.take(),
		"crash after-metadata", "register 3 refused",
		"tm0 aborted 3", "tm1 aborted 3", "unregister [3]")
	if got := chkDirs(t, dir); !slices.Equal(got, []string{"chk-2"}) {
		t.Fatalf("checkpoint folders %v, want [chk-2]", got)
	}
	if got := jm.cfg.Status.FailedCheckpoints.Load(); got != 1 {
		t.Fatalf("%d failed checkpoints, want 1", got)
	}
	// The job goes on: checkpoint 4 completes.
	checkpointAll(t, jm, 0)
	wantLines(t, "checkpoint 4", calls.take(),
		"crash after-metadata", "register 4", "crash after-register",
		"tm0 complete 4", "crash mid-notify", "tm1 complete 4",
		"unregister [2]")
	if ids, _ := reg.Registered(context.Background()); !slices.Equal(ids, []checkpoint.ID{4}) {
		t.Fatalf("registered %v, want [4]", ids)
	}

	// A deposed JobManager wrote checkpoint 9's metadata and never
	// registered it: a task failure restores checkpoint 4.
	md, err := metadataFor("j", jm.jg, 9, checkpoint.Periodic, time.Unix(2000, 0), statesOf(jm.jg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jm.store.WriteMetadata(context.Background(), md); err != nil {
		t.Fatal(err)
	}
	step(jm, jobmaster.StateChanged{Exec: deployment.ExecutionID{Task: tid(1, 1)}, State: deployment.ExecFailed, Err: errors.New("boom")})
	step(jm, execState(0, 0, 0, deployment.ExecCanceled), execState(0, 1, 0, deployment.ExecCanceled), execState(1, 0, 0, deployment.ExecCanceled))
	settle(jm)
	wantLines(t, "restart", calls.take(), "tm0 deploy restore=4", "tm1 deploy restore=4")
	const said = "checkpoint 9 has metadata but was never registered (its JobManager lost leadership or crashed before registering): not restored"
	if n := strings.Count(logs.String(), said); n != 1 {
		t.Fatalf("the unregistered checkpoint was reported %d times, want once:\n%s", n, logs)
	}
	// Again: restored from 4, and said only once.
	runningAll(jm, 1)
	step(jm, jobmaster.StateChanged{Exec: deployment.ExecutionID{Task: tid(1, 1), Attempt: 1}, State: deployment.ExecFailed, Err: errors.New("boom")})
	step(jm, execState(0, 0, 1, deployment.ExecCanceled), execState(0, 1, 1, deployment.ExecCanceled), execState(1, 0, 1, deployment.ExecCanceled))
	settle(jm)
	wantLines(t, "second restart", calls.take(), "tm0 deploy restore=4", "tm1 deploy restore=4")
	if n := strings.Count(logs.String(), said); n != 1 {
		t.Fatalf("the unregistered checkpoint was reported %d times, want once", n)
	}
}

// statesOf returns an empty state of every subtask of jg.
func statesOf(jg *dataflow.JobGraph) []checkpoint.TaskState {
	var out []checkpoint.TaskState
	for _, v := range jg.Vertices {
		for s := range v.Parallelism {
			out = append(out, checkpoint.TaskState{Task: checkpoint.TaskID{Vertex: v.ID, Subtask: s}})
		}
	}
	return out
}

// TestInitialRestorePointRegistered: a job recovered under high
// availability starts from the newest registered checkpoint, skipping a
// newer one nobody registered; with none registered it starts fresh (its
// ids still after every checkpoint on storage).
func TestInitialRestorePointRegistered(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.Open(dir, "j")
	if err != nil {
		t.Fatal(err)
	}
	jg := twoStageGraph(t)
	for _, id := range []checkpoint.ID{1, 2, 3} {
		md, err := metadataFor("j", jg, id, checkpoint.Periodic, time.Unix(2000, 0), statesOf(jg))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.WriteMetadata(context.Background(), md); err != nil {
			t.Fatal(err)
		}
	}
	calls := &callLog{}
	reg := &memRegistry{log: calls, ids: map[checkpoint.ID]string{1: "", 2: ""}}
	cfg := JobConfig{JobName: "j", CheckpointDir: dir, NumRetained: 1}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	cfg.registry = reg
	jm := newJobMaster(cfg, jg, store)
	rp, next, err := jm.initialRestorePoint(context.Background())
	if err != nil || rp == nil || rp.md.ID != 2 || next != 4 {
		t.Fatalf("initial restore point %v, next %d, %v; want checkpoint 2, next 4", rp, next, err)
	}
	reg.ids = map[checkpoint.ID]string{}
	rp, next, err = jm.initialRestorePoint(context.Background())
	if err != nil || rp != nil || next != 4 {
		t.Fatalf("with nothing registered: initial restore point %v, next %d, %v; want none, next 4", rp, next, err)
	}
	// Without a registry, the newest metadata is restored, as ever.
	jm.cfg.registry = nil
	if rp, _, err := jm.initialRestorePoint(context.Background()); err != nil || rp == nil || rp.md.ID != 3 {
		t.Fatalf("without a registry: %v, %v; want checkpoint 3", rp, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "j", "chk-3", "_metadata")); err != nil {
		t.Fatal(err)
	}
}
