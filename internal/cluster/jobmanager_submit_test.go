package cluster

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/testutil"
)

// bareJobManager is a jobManager and its Dispatcher without TaskManagers,
// for tests that reach into the job table: jobs submitted to it wait for
// slots until cancelled.
type bareJobManager struct {
	m    *jobManager
	d    *Dispatcher
	stop context.CancelFunc // ends m's context, as a JobManager shutdown does
}

func startBareJobManager(t *testing.T, dir string) *bareJobManager {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(&testutil.SyncBuffer{}, nil))
	m := newJobManager(ctx, JobManagerConfig{StateDir: dir, Resolve: demoResolver, BuildID: testBuild, Logger: log, SlotRequestTimeout: time.Hour})
	d, err := ServeDispatcher(ln, DispatcherConfig{BuildID: testBuild, Logger: log, Jobs: m,
		OnTaskManagerRegistered: m.onRegistered, OnTaskManagerMessage: m.onMessage, OnTaskManagerLost: m.onLost})
	if err != nil {
		t.Fatal(err)
	}
	m.setDispatcher(d)
	close(m.ready)
	b := &bareJobManager{m: m, d: d, stop: stop}
	t.Cleanup(func() {
		stop()
		m.wg.Wait()
		d.Stop()
	})
	return b
}

func demoSpec(dir, name string) *pb.JobSpec {
	return &pb.JobSpec{Name: name, Kind: "demo", Args: []string{"1000", "3", "0", filepath.Join(dir, "out-"+name)}, Config: baseConf(1)}
}

// TestClusterConcurrentSubmitsOfOneName: two clients submit a job of the
// same name at once. Exactly one may run it: two JobMasters of one name
// would share its checkpoint folder, its slots and its TaskManager
// messages (routed by name), and write its sink twice.
func TestClusterConcurrentSubmitsOfOneName(t *testing.T) {
	// The first build waits for a second one to start, so that both
	// submissions are past their checks before either registers its job.
	var once sync.Once
	second := make(chan struct{})
	var calls sync.Mutex
	n := 0
	resolve := func(ctx context.Context, spec deployment.JobSpec) (*dataflow.Graph, runtime.JobConfig, error) {
		calls.Lock()
		n++
		first := n == 1
		calls.Unlock()
		if first {
			select {
			case <-second:
			case <-time.After(time.Second):
			}
		} else {
			once.Do(func() { close(second) })
		}
		return demoResolver(ctx, spec)
	}
	c := startTestCluster(t, JobManagerConfig{Resolve: resolve, SlotRequestTimeout: time.Minute})
	c.startTM("tm-a", 1)
	spec := demoSpec(c.dir, "twice")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.client().Submit(context.Background(), &pb.SubmitRequest{Spec: spec})
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case status.Code(err) == codes.AlreadyExists:
			refused++
		default:
			t.Errorf("submit: %v", err)
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("%d submissions accepted, %d refused as existing (%v), want 1 and 1", ok, refused, errs)
	}
	if u := c.wait("twice", time.Minute); jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s", u.GetState(), u.GetFailure())
	}
}

// TestSubmitWaitsForEndingJobOfItsName: a job whose state turned terminal
// still releases its slots and writes its record before its run returns.
// A new job of its name submitted in that moment must wait for it, or
// the old job's last steps free the new job's slots (the pool keys them
// by name) and overwrite the new job's record with a terminal one (a
// JobManager restart would then not recover it).
func TestSubmitWaitsForEndingJobOfItsName(t *testing.T) {
	dir := t.TempDir()
	b := startBareJobManager(t, dir)
	ctx := context.Background()
	if _, err := b.m.Submit(ctx, &pb.SubmitRequest{Spec: demoSpec(dir, "j")}); err != nil {
		t.Fatal(err)
	}
	old := b.m.job("j")
	if _, err := b.m.Cancel(ctx, &pb.CancelRequest{Job: "j"}); err != nil {
		t.Fatal(err)
	}
	<-old.done
	// Back to the moment between the terminal state and the end of its
	// run: the state says CANCELED, done is not closed yet.
	ending := make(chan struct{})
	b.m.mu.Lock()
	old.done = ending
	b.m.mu.Unlock()
	if st, _ := old.state(); st != jobstatus.StateCanceled {
		t.Fatalf("old job is %s, want CANCELED", st)
	}
	submitted := make(chan error, 1)
	go func() {
		_, err := b.m.Submit(ctx, &pb.SubmitRequest{Spec: demoSpec(dir, "j")})
		submitted <- err
	}()
	select {
	case err := <-submitted:
		t.Fatalf("submission returned (%v) while the old job of its name was still ending", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(ending)
	if err := <-submitted; err != nil {
		t.Fatalf("submission after the old job ended: %v", err)
	}
	if b.m.job("j") == old {
		t.Fatal("the new submission did not replace the ended job")
	}
}

// TestCancelledJobStaysCancelledOverShutdown: a job the user cancelled
// whose end races the JobManager's shutdown is recorded CANCELED. Kept
// RUNNING (as a job stopped only by the shutdown is), the next JobManager
// would bring the cancelled job back to life.
func TestCancelledJobStaysCancelledOverShutdown(t *testing.T) {
	dir := t.TempDir()
	b := startBareJobManager(t, dir)
	ctx := context.Background()
	if _, err := b.m.Submit(ctx, &pb.SubmitRequest{Spec: demoSpec(dir, "j")}); err != nil {
		t.Fatal(err)
	}
	j := b.m.job("j")
	// The job waits for slots; holding the pool keeps it from ending (it
	// releases its slots first) until both cancellations happened.
	b.d.WithSlotPool(func(*SlotPool) {
		if _, err := b.m.Cancel(ctx, &pb.CancelRequest{Job: "j"}); err != nil {
			t.Error(err)
		}
		b.stop()
	})
	<-j.done
	recs, errs := b.m.store.load()
	if len(errs) > 0 || len(recs) != 1 {
		t.Fatalf("records %v, errors %v", recs, errs)
	}
	if recs[0].State != jobstatus.StateCanceled {
		t.Fatalf("the cancelled job is recorded %s, want CANCELED: a restarted JobManager would run it again", recs[0].State)
	}
}

// TestListWhileJobEnds lists jobs while one ends; with -race it proves
// that List reads a job's record only once its end was recorded.
func TestListWhileJobEnds(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{})
	c.startTM("tm-a", 1)
	c.submitDemo("listed", 5_000, 3, 0, baseConf(1))
	for {
		l, err := c.client().List(context.Background(), &pb.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if st := jobstatus.JobState(l.GetJobs()[0].GetState()); st == jobstatus.StateFinished {
			if l.GetJobs()[0].GetEndUnixMillis() == 0 {
				t.Fatal("a finished job listed without its end time")
			}
			return
		} else if strings.Contains(string(st), "FAIL") {
			t.Fatalf("job %s: %s", st, l.GetJobs()[0].GetFailure())
		}
	}
}

// TestClusterSlotsOfEndedJobWakeWaitingJob: a job waiting for slots
// another job holds starts when that job ends, not at its next periodic
// retry (10 s later) or, with a shorter slot.request.timeout, never.
func TestClusterSlotsOfEndedJobWakeWaitingJob(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{SlotRequestTimeout: time.Minute})
	c.startTM("tm-a", 1)
	c.submitDemo("first", 30_000, 3, 30_000, baseConf(1))
	time.Sleep(200 * time.Millisecond)
	out := c.submitDemo("second", 2_000, 3, 0, baseConf(1))
	if u := c.wait("first", time.Minute); jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("first ended %s: %s", u.GetState(), u.GetFailure())
	}
	ended := time.Now()
	if u := c.wait("second", time.Minute); jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("second ended %s: %s", u.GetState(), u.GetFailure())
	}
	if d := time.Since(ended); d > 5*time.Second {
		t.Fatalf("the waiting job ended %s after the slot holder: it was not woken by the release", d.Round(time.Millisecond))
	}
	checkDemoOutput(t, out, 2_000, 3)
}

// TestPanickingBuilder: a job builder that panics fails its submission,
// naming the builder and the fix, and the JobManager serves on; a
// recorded job whose builder panics is recorded FAILED at the next start
// instead of keeping the JobManager from starting.
func TestPanickingBuilder(t *testing.T) {
	resolve := func(ctx context.Context, spec deployment.JobSpec) (*dataflow.Graph, runtime.JobConfig, error) {
		if spec.Name == "bad" {
			var m map[string]int
			m["x"] = 1 // a builder bug: assignment to a nil map
		}
		return demoResolver(ctx, spec)
	}
	c := startTestCluster(t, JobManagerConfig{Resolve: resolve})
	_, err := c.client().Submit(context.Background(), &pb.SubmitRequest{Spec: demoSpec(c.dir, "bad")})
	if err == nil || !strings.Contains(err.Error(), "the demo builder panicked on job bad's arguments") || !strings.Contains(err.Error(), "fix the builder") {
		t.Fatalf("submission of a panicking builder: %v", err)
	}
	c.startTM("tm-a", 1)
	c.submitDemo("good", 1_000, 3, 0, baseConf(1))
	if u := c.wait("good", time.Minute); jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job after the panic ended %s: %s", u.GetState(), u.GetFailure())
	}

	// A record of a job whose builder panics (it did not when submitted).
	if err := (jobStore{dir: c.dir}).save(jobRecord{Spec: deployment.JobSpec{Name: "bad", Kind: "demo", Args: demoSpec(c.dir, "bad").Args}, State: jobstatus.StateRunning}); err != nil {
		t.Fatal(err)
	}
	c.stopJM()
	if err := <-c.jmDone; err != nil {
		t.Fatal(err)
	}
	c.startJM(JobManagerConfig{Resolve: resolve, StateDir: c.dir})
	l, err := c.client().List(context.Background(), &pb.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, j := range l.GetJobs() {
		if j.GetName() == "bad" {
			found = true
			if jobstatus.JobState(j.GetState()) != jobstatus.StateFailed || !strings.Contains(j.GetFailure(), "panicked") {
				t.Fatalf("recovered job bad: %s %s", j.GetState(), j.GetFailure())
			}
		}
	}
	if !found {
		t.Fatalf("job bad is not listed after the restart: %v", l.GetJobs())
	}
}
