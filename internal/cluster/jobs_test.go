package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/rest"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/testutil"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// demoResolver builds the demo job from args "EVENTS KEYS RATE OUT" and
// the spec's configuration, as an application-mode binary would.
func demoResolver(ctx context.Context, spec deployment.JobSpec) (*dataflow.Graph, runtime.JobConfig, error) {
	if len(spec.Args) != 4 {
		return nil, runtime.JobConfig{}, fmt.Errorf("demo wants 4 arguments, got %q", spec.Args)
	}
	events, _ := strconv.ParseInt(spec.Args[0], 10, 64)
	keys, _ := strconv.ParseInt(spec.Args[1], 10, 64)
	rate, _ := strconv.ParseFloat(spec.Args[2], 64)
	env, err := specEnv(spec)
	if err != nil {
		return nil, runtime.JobConfig{}, err
	}
	demo.Build(env, demo.Options{Events: events, Keys: keys, Rate: rate, Out: spec.Args[3]})
	return hooks.Plan(env).Resolve(ctx, spec.Name)
}

// specEnv is an Env with the configuration of spec.
func specEnv(spec deployment.JobSpec) (*weir.Env, error) {
	cfg := weir.NewConfig()
	for k, v := range spec.Config {
		if err := cfg.Set(k, v); err != nil {
			return nil, err
		}
	}
	return weir.NewEnv(weir.WithConfig(cfg)), nil
}

// testCluster is a JobManager and TaskManagers as goroutines of the test,
// talking gRPC and TCP over loopback.
type testCluster struct {
	t       *testing.T
	jmAddr  string
	restURL string
	dir     string
	log     *testutil.SyncBuffer
	stopJM  context.CancelFunc
	jmDone  chan error

	// resolve builds jobs in every role (demoResolver when nil).
	resolve Resolver
	// tmCancellationTimeout is the TaskManagers' task.cancellation.timeout.
	tmCancellationTimeout time.Duration

	mu  sync.Mutex
	tms map[string]*testTM
}

type testTM struct {
	cancel context.CancelFunc
	done   chan error
}

func startTestCluster(t *testing.T, jmCfg JobManagerConfig) *testCluster {
	t.Helper()
	c := &testCluster{t: t, dir: t.TempDir(), tms: map[string]*testTM{}, log: &testutil.SyncBuffer{}, resolve: jmCfg.Resolve}
	if jmCfg.StateDir == "" {
		jmCfg.StateDir = c.dir
	}
	c.dir = jmCfg.StateDir
	c.startJM(jmCfg)
	t.Cleanup(c.stop)
	return c
}

func (c *testCluster) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(c.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (c *testCluster) startJM(cfg JobManagerConfig) {
	c.t.Helper()
	if cfg.RPCAddress == "" {
		cfg.RPCAddress = "127.0.0.1:0"
	}
	if cfg.Resolve == nil {
		cfg.Resolve = demoResolver
	}
	cfg.BuildID = testBuild
	cfg.Logger = c.logger().With("role", "jobmanager")
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval, cfg.HeartbeatTimeout = 200*time.Millisecond, 2*time.Second
	}
	ready := make(chan [2]net.Addr, 1)
	cfg.Ready = func(rpc, rest net.Addr) { ready <- [2]net.Addr{rpc, rest} }
	ctx, cancel := context.WithCancel(context.Background())
	c.stopJM, c.jmDone = cancel, make(chan error, 1)
	go func() { c.jmDone <- RunJobManager(ctx, cfg) }()
	select {
	case a := <-ready:
		c.jmAddr = a[0].String()
		if a[1] != nil {
			c.restURL = "http://" + a[1].String()
		}
	case err := <-c.jmDone:
		c.t.Fatalf("JobManager did not start: %v", err)
	}
}

func (c *testCluster) startTM(id string, slots int) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tm := &testTM{cancel: cancel, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		tm.done <- RunTaskManagerProcess(ctx, TaskManagerProcessConfig{
			JobManager: c.jmAddr, Slots: slots, ResourceID: id, MetricsAddress: "-",
			Resolve: c.resolver(), BuildID: testBuild, Logger: c.logger().With("role", id),
			RegistrationTimeout: 20 * time.Second, CancellationTimeout: c.tmCancellationTimeout,
			Ready: func(net.Addr, net.Addr) { close(ready) },
		})
	}()
	select {
	case <-ready:
	case err := <-tm.done:
		c.t.Fatalf("TaskManager %s did not start: %v", id, err)
	}
	c.mu.Lock()
	c.tms[id] = tm
	c.mu.Unlock()
}

func (c *testCluster) resolver() Resolver {
	if c.resolve != nil {
		return c.resolve
	}
	return demoResolver
}

// killTM stops a TaskManager the way a crash looks to the JobManager: its
// stream closes and its tasks stop.
func (c *testCluster) killTM(id string) {
	c.mu.Lock()
	tm := c.tms[id]
	delete(c.tms, id)
	c.mu.Unlock()
	tm.cancel()
	if err := <-tm.done; err != nil {
		c.t.Errorf("TaskManager %s: %v", id, err)
	}
}

func (c *testCluster) stop() {
	c.mu.Lock()
	ids := make([]string, 0, len(c.tms))
	for id := range c.tms {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	if c.stopJM != nil {
		c.stopJM()
		if err := <-c.jmDone; err != nil {
			c.t.Errorf("JobManager: %v", err)
		}
		c.stopJM = nil
	}
	for _, id := range ids {
		c.killTM(id)
	}
}

func (c *testCluster) client() pb.JobManagerClient {
	c.t.Helper()
	conn, err := dialForTest(c.jmAddr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	return pb.NewJobManagerClient(conn)
}

// submitDemo submits the demo and returns its output folder.
func (c *testCluster) submitDemo(name string, events, keys int64, rate float64, conf map[string]string) string {
	c.t.Helper()
	out := filepath.Join(c.dir, "out-"+name)
	spec := &pb.JobSpec{Name: name, Kind: "demo", Args: []string{strconv.FormatInt(events, 10), strconv.FormatInt(keys, 10), strconv.FormatFloat(rate, 'f', -1, 64), out}, Config: conf}
	if _, err := c.client().Submit(context.Background(), &pb.SubmitRequest{Spec: spec}); err != nil {
		c.t.Fatalf("submit: %v", err)
	}
	return out
}

// wait follows the job until it ends and returns its final update.
func (c *testCluster) wait(name string, timeout time.Duration) *pb.JobUpdate {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := c.client().Wait(ctx, &pb.WaitRequest{Job: name})
	if err != nil {
		c.t.Fatal(err)
	}
	var last *pb.JobUpdate
	for {
		u, err := s.Recv()
		if err != nil {
			c.t.Fatalf("wait for %s: %v (last update %v)\nlog:\n%s", name, err, last, c.log.String())
		}
		last = u
		if u.GetTerminal() {
			return u
		}
	}
}

func checkDemoOutput(t *testing.T, out string, events, keys int64) {
	t.Helper()
	lines, err := file.ReadCommitted(out)
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(events, keys), lines); d != "" {
		t.Fatalf("committed output differs from the failure-free run: %s", d)
	}
}

func baseConf(p int) map[string]string {
	return map[string]string{
		"parallelism.default":                   strconv.Itoa(p),
		"execution.checkpointing.interval":      "100ms",
		"restart-strategy.type":                 "fixed-delay",
		"restart-strategy.fixed-delay.attempts": "100",
		"restart-strategy.fixed-delay.delay":    "100ms",
	}
}

// TestClusterRunsJob runs the demo on one TaskManager (every channel is
// in process) and on two with forward-only placement of nothing remote:
// the control plane end to end.
func TestClusterRunsJob(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{})
	c.startTM("tm-a", 2)
	const n, k = 20_000, 17
	out := c.submitDemo("demo-cluster", n, k, 0, baseConf(2))
	u := c.wait("demo-cluster", time.Minute)
	if jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s\nlog:\n%s", u.GetState(), u.GetFailure(), c.log.String())
	}
	checkDemoOutput(t, out, n, k)
	if !strings.Contains(c.log.String(), "checkpoint completed") && !strings.Contains(c.log.String(), "completed") {
		t.Log("no checkpoint completed message in the log")
	}
}

// busyTaskManagers returns the TaskManagers with a used slot, from GET
// /taskmanagers.
func (c *testCluster) busyTaskManagers() []string {
	c.t.Helper()
	resp, err := http.Get(c.restURL + "/taskmanagers")
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body rest.TaskManagers
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, tm := range body.TaskManagers {
		if tm.FreeSlots < tm.SlotsNumber {
			out = append(out, tm.ID)
		}
	}
	return out
}

func dialForTest(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, append(VersionClientOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
}

// TestClusterTaskManagerLoss kills the TaskManager running a job: the job
// restarts on the other TaskManager's free slot from its newest
// checkpoint, and the committed output is exactly the failure-free one.
// The killed TaskManager comes back and offers its slot again.
func TestClusterTaskManagerLoss(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{RESTAddress: "127.0.0.1:0"})
	c.startTM("tm-a", 1)
	c.startTM("tm-b", 1)
	const n, k = 60_000, 13
	out := c.submitDemo("demo-loss", n, k, 40_000, baseConf(1))
	time.Sleep(600 * time.Millisecond)
	busy := c.busyTaskManagers()
	if len(busy) != 1 {
		t.Fatalf("TaskManagers with a used slot: %v, want one", busy)
	}
	c.killTM(busy[0])
	c.startTM(busy[0], 1)
	u := c.wait("demo-loss", time.Minute)
	if jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s\nlog:\n%s", u.GetState(), u.GetFailure(), c.log.String())
	}
	checkDemoOutput(t, out, n, k)
	log := c.log.String()
	if !strings.Contains(log, "TaskManager lost; restarting its regions") {
		t.Fatalf("the job never saw tm-a's loss:\n%s", log)
	}
	if !strings.Contains(log, `msg=restoring`) {
		t.Errorf("the restarted region did not restore a checkpoint")
	}
}

// TestClusterJobManagerRestart stops the JobManager while a job runs and
// starts a new one on the same state folder and address: the TaskManagers
// register again, the job is recovered from its newest checkpoint, and
// the committed output is exactly the failure-free one.
func TestClusterJobManagerRestart(t *testing.T) {
	addr := testutil.FreeAddr(t)
	c := startTestCluster(t, JobManagerConfig{RPCAddress: addr})
	c.startTM("tm-a", 1)
	const n, k = 80_000, 11
	out := c.submitDemo("demo-jmrestart", n, k, 40_000, baseConf(1))
	time.Sleep(700 * time.Millisecond)
	c.stopJobManager()
	c.startJM(JobManagerConfig{RPCAddress: addr, StateDir: c.dir})
	u := c.wait("demo-jmrestart", time.Minute)
	if jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s\nlog:\n%s", u.GetState(), u.GetFailure(), c.log.String())
	}
	checkDemoOutput(t, out, n, k)
	log := c.log.String()
	if !strings.Contains(log, "job recovered") || !strings.Contains(log, "msg=restoring") {
		t.Fatalf("the new JobManager did not recover the job from a checkpoint:\n%s", log)
	}
}

// TestClusterNotEnoughSlots submits a job needing two slots to a cluster
// with one: it waits saying what it needs, then fails after
// slot.request.timeout naming the fix, and a restart is not tried.
func TestClusterNotEnoughSlots(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{SlotRequestTimeout: 700 * time.Millisecond})
	c.startTM("tm-a", 1)
	c.submitDemo("demo-slots", 1000, 3, 0, baseConf(2))
	u := c.wait("demo-slots", time.Minute)
	if jobstatus.JobState(u.GetState()) != jobstatus.StateFailed {
		t.Fatalf("job ended %s, want FAILED", u.GetState())
	}
	for _, want := range []string{"job demo-slots needs 2 slots, 1 free on 1 TaskManager", "slot.request.timeout", "start TaskManagers or give them more --slots"} {
		if !strings.Contains(u.GetFailure(), want) {
			t.Errorf("failure %q does not say %q", u.GetFailure(), want)
		}
	}
	if log := c.log.String(); !strings.Contains(log, "waiting up to 700ms (slot.request.timeout)") {
		t.Errorf("no waiting message in the log:\n%s", log)
	}
}

// TestClusterCancel cancels a running unbounded job through the client
// RPC; List shows it CANCELED.
func TestClusterCancel(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{})
	c.startTM("tm-a", 2)
	c.submitDemo("demo-cancel", 0, 5, 10_000, baseConf(2))
	time.Sleep(300 * time.Millisecond)
	if _, err := c.client().Cancel(context.Background(), &pb.CancelRequest{Job: "demo-cancel"}); err != nil {
		t.Fatal(err)
	}
	if u := c.wait("demo-cancel", 30*time.Second); jobstatus.JobState(u.GetState()) != jobstatus.StateCanceled {
		t.Fatalf("job ended %s (%s), want CANCELED", u.GetState(), u.GetFailure())
	}
	l, err := c.client().List(context.Background(), &pb.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.GetJobs()) != 1 || jobstatus.JobState(l.GetJobs()[0].GetState()) != jobstatus.StateCanceled {
		t.Fatalf("List = %v, want demo-cancel CANCELED", l.GetJobs())
	}
	if _, err := c.client().Cancel(context.Background(), &pb.CancelRequest{Job: "nope"}); err == nil || !strings.Contains(err.Error(), "no job nope") {
		t.Fatalf("Cancel of an unknown job: %v", err)
	}
}

// TestClusterShuffleAcrossTaskManagers runs the demo at parallelism 2 on
// two TaskManagers of one slot each: the keyed exchange crosses the data
// plane between them. A TaskManager is lost and returns twice; the output
// is exact.
func TestClusterShuffleAcrossTaskManagers(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{RESTAddress: "127.0.0.1:0"})
	c.startTM("tm-a", 1)
	c.startTM("tm-b", 1)
	const n, k = 120_000, 19
	out := c.submitDemo("demo-shuffle", n, k, 60_000, baseConf(2))
	for _, id := range []string{"tm-a", "tm-b"} {
		time.Sleep(500 * time.Millisecond)
		c.killTM(id)
		c.startTM(id, 1)
	}
	u := c.wait("demo-shuffle", time.Minute)
	if jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s\nlog:\n%s", u.GetState(), u.GetFailure(), c.log.String())
	}
	checkDemoOutput(t, out, n, k)
	if got := strings.Count(c.log.String(), "TaskManager lost; restarting its regions"); got < 2 {
		t.Fatalf("the job saw %d TaskManager losses, want 2", got)
	}
}

// TestClusterResubmit: a job submitted under the name of a finished one
// is refused, naming the finished run its folder records, unless the
// submission asks to run it again (rerun), when it starts from scratch;
// under the name of a cancelled one whose checkpoints are still in storage
// it is refused, naming the ways out, instead of silently resuming the old
// run.
func TestClusterResubmit(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{})
	c.startTM("tm-a", 1)
	c.submitDemo("again", 5_000, 3, 0, baseConf(1))
	if u := c.wait("again", time.Minute); jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s", u.GetState(), u.GetFailure())
	}
	if ents, err := os.ReadDir(filepath.Join(c.dir, "checkpoints", "again")); err != nil || len(ents) != 1 || ents[0].Name() != "_finished.json" {
		t.Fatalf("the finished job's folder holds %v (%v), want only its finished-run marker", ents, err)
	}
	spec := &pb.JobSpec{Name: "again", Kind: "demo", Args: []string{"5000", "3", "0", filepath.Join(c.dir, "out-again2")}, Config: baseConf(1)}
	_, err := c.client().Submit(context.Background(), &pb.SubmitRequest{Spec: spec})
	if err == nil || !strings.Contains(err.Error(), "job again already FINISHED: "+filepath.Join(c.dir, "checkpoints", "again", "_finished.json")) || !strings.Contains(err.Error(), "--rerun") {
		t.Fatalf("resubmission of a finished job: %v, want the refusal naming the finished run", err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "out-again2")); !os.IsNotExist(err) {
		t.Fatalf("the refused submission wrote its output folder (%v)", err)
	}
	if _, err := c.client().Submit(context.Background(), &pb.SubmitRequest{Spec: spec, Rerun: true}); err != nil {
		t.Fatalf("resubmission of a finished job with rerun: %v", err)
	}
	if u := c.wait("again", time.Minute); jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("the resubmitted job ended %s: %s", u.GetState(), u.GetFailure())
	}
	checkDemoOutput(t, filepath.Join(c.dir, "out-again2"), 5_000, 3)
	if !strings.Contains(c.log.String(), "job again: starting from scratch") {
		t.Errorf("the JobManager did not say where the job starts:\n%s", c.log.String())
	}

	c.submitDemo("stopped", 1_000_000, 3, 20_000, baseConf(1))
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := c.client().Checkpoints(context.Background(), &pb.CheckpointsRequest{Job: "stopped"})
		if err == nil && r.GetCompleted() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint completed within a minute (%v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.client().Cancel(context.Background(), &pb.CancelRequest{Job: "stopped"}); err != nil {
		t.Fatal(err)
	}
	c.wait("stopped", time.Minute)
	spec = &pb.JobSpec{Name: "stopped", Kind: "demo", Args: []string{"5000", "3", "0", filepath.Join(c.dir, "out-stopped2")}, Config: baseConf(1)}
	_, err = c.client().Submit(context.Background(), &pb.SubmitRequest{Spec: spec})
	if err == nil || !strings.Contains(err.Error(), "of an earlier run of a job with this name: resume it with --from") {
		t.Fatalf("resubmission of a cancelled job: %v", err)
	}
}

// TestClusterRecoveredRunNumbersAttemptsApart: a job recovered by a
// restarted JobManager deploys attempts of a new range, so a task left
// over from the first run is an older attempt everywhere.
func TestClusterRecoveredRunNumbersAttemptsApart(t *testing.T) {
	addr := testutil.FreeAddr(t)
	c := startTestCluster(t, JobManagerConfig{RPCAddress: addr})
	c.startTM("tm-a", 1)
	const n, k = 60_000, 7
	out := c.submitDemo("demo-runs", n, k, 40_000, baseConf(1))
	time.Sleep(500 * time.Millisecond)
	c.stopJobManager()
	recs, errs := jobStore{dir: c.dir}.load()
	if len(errs) > 0 || len(recs) != 1 || recs[0].ReservedCheckpoints < 100 {
		t.Fatalf("records %+v (%v): want the first run's checkpoint ids reserved", recs, errs)
	}
	reserved := recs[0].ReservedCheckpoints
	mark := len(c.log.String())
	c.startJM(JobManagerConfig{RPCAddress: addr, StateDir: c.dir})
	if u := c.wait("demo-runs", time.Minute); jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s", u.GetState(), u.GetFailure())
	}
	checkDemoOutput(t, out, n, k)
	log := c.log.String()
	if !strings.Contains(log, "exec=0/0#0 ") {
		t.Fatalf("the first run did not deploy attempt 0:\n%s", log)
	}
	if !strings.Contains(log, fmt.Sprintf("exec=0/0#%d ", attemptsPerRun)) {
		t.Fatalf("the recovered run did not deploy attempt %d:\n%s", attemptsPerRun, log)
	}
	// The recovered run's checkpoints take ids from the reserved bound on.
	m := regexp.MustCompile(`msg="checkpoint triggered" role=jobmanager job=demo-runs id=(\d+)`).FindStringSubmatch(log[mark:])
	if m == nil {
		t.Fatalf("the recovered run triggered no checkpoint:\n%s", log)
	}
	if id, _ := strconv.ParseInt(m[1], 10, 64); id < reserved {
		t.Fatalf("the recovered run's first checkpoint is %d, below the first run's reservation %d", id, reserved)
	}
}

// TestClusterSlowBuilderKeepsHeartbeats: a TaskManager whose job builder
// takes longer than heartbeat.timeout still answers heartbeats (the
// builder does not run on the session's reader), so it is not declared
// lost, and the job runs.
func TestClusterSlowBuilderKeepsHeartbeats(t *testing.T) {
	var calls atomic.Int32
	slow := func(ctx context.Context, spec deployment.JobSpec) (*dataflow.Graph, runtime.JobConfig, error) {
		if calls.Add(1) > 1 { // the JobManager's build is the first
			time.Sleep(3 * time.Second) // heartbeat.timeout is 2s here
		}
		return demoResolver(ctx, spec)
	}
	c := startTestCluster(t, JobManagerConfig{Resolve: slow})
	c.startTM("tm-a", 1)
	const n, k = 5_000, 3
	out := c.submitDemo("demo-slow", n, k, 0, baseConf(1))
	if u := c.wait("demo-slow", time.Minute); jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s\nlog:\n%s", u.GetState(), u.GetFailure(), c.log.String())
	}
	checkDemoOutput(t, out, n, k)
	if log := c.log.String(); strings.Contains(log, "TaskManager lost") {
		t.Fatalf("the TaskManager was declared lost while its builder ran:\n%s", log)
	}
}

// TestClusterUnrecoveredJobIsKept: a job a restarted JobManager cannot
// rebuild shows FAILED with the cause, but its record stays unfinished on
// disk, so the next JobManager tries again (and recovers it once the cause
// is gone); a client's cancel gives it up for good.
func TestClusterUnrecoveredJobIsKept(t *testing.T) {
	addr := testutil.FreeAddr(t)
	var broken atomic.Bool
	resolve := func(ctx context.Context, spec deployment.JobSpec) (*dataflow.Graph, runtime.JobConfig, error) {
		if broken.Load() {
			return nil, runtime.JobConfig{}, errors.New("storage unreachable")
		}
		return demoResolver(ctx, spec)
	}
	c := startTestCluster(t, JobManagerConfig{RPCAddress: addr, Resolve: resolve})
	c.startTM("tm-a", 1)
	c.submitDemo("kept", 0, 3, 1000, baseConf(1)) // unbounded
	time.Sleep(300 * time.Millisecond)
	restart := func() {
		c.stopJobManager()
		c.startJM(JobManagerConfig{RPCAddress: addr, StateDir: c.dir, Resolve: resolve})
	}
	broken.Store(true)
	restart()
	l, err := c.client().List(context.Background(), &pb.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.GetJobs()) != 1 || jobstatus.JobState(l.GetJobs()[0].GetState()) != jobstatus.StateFailed || !strings.Contains(l.GetJobs()[0].GetFailure(), "recovery failed: ") || !strings.Contains(l.GetJobs()[0].GetFailure(), "storage unreachable") {
		t.Fatalf("List = %v, want kept FAILED with the cause", l.GetJobs())
	}
	broken.Store(false)
	restart()
	if u := c.waitState("kept", jobstatus.StateRunning, 30*time.Second); u != jobstatus.StateRunning {
		t.Fatalf("the job was not recovered once the cause was gone: %s\n%s", u, c.log.String())
	}
	broken.Store(true)
	restart()
	if _, err := c.client().Cancel(context.Background(), &pb.CancelRequest{Job: "kept"}); err != nil {
		t.Fatal(err)
	}
	broken.Store(false)
	restart()
	l, err = c.client().List(context.Background(), &pb.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.GetJobs()) != 1 || jobstatus.JobState(l.GetJobs()[0].GetState()) != jobstatus.StateCanceled {
		t.Fatalf("after cancel and a restart, List = %v, want kept CANCELED", l.GetJobs())
	}
}

// waitState polls List until the job shows state or timeout passes, and
// returns the last state seen.
func (c *testCluster) waitState(job string, state jobstatus.JobState, timeout time.Duration) jobstatus.JobState {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var last jobstatus.JobState
	for time.Now().Before(deadline) {
		l, err := c.client().List(context.Background(), &pb.ListRequest{})
		if err != nil {
			c.t.Fatal(err)
		}
		for _, j := range l.GetJobs() {
			if j.GetName() == job {
				last = jobstatus.JobState(j.GetState())
			}
		}
		if last == state {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
	return last
}

// stopJobManager stops the JobManager the way a graceful shutdown does and
// waits for it.
func (c *testCluster) stopJobManager() {
	c.t.Helper()
	c.stopJM()
	if err := <-c.jmDone; err != nil {
		c.t.Fatalf("JobManager: %v", err)
	}
}
