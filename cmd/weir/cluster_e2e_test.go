package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/testutil"
)

// The multi-process tests of cluster mode: a JobManager and TaskManagers
// as separate weir processes on loopback, a job submitted with weir run
// --jobmanager, processes killed with SIGKILL (or stopped with SIGSTOP) at
// random moments; the committed output must equal the failure-free output
// exactly, as a multiset.

// e2eCluster is a JobManager and TaskManagers started from the test binary.
type e2eCluster struct {
	t        *testing.T
	dir      string
	rpc      string
	rest     string
	jmArgs   []string
	jm       *running
	tms      map[string]*running
	tmArgs   map[string][]string
	lifetime time.Duration
	// sawUnaligned is set by watchCheckpoints.
	sawUnaligned atomic.Bool
}

func startE2ECluster(t *testing.T, taskManagers, slots int, conf ...string) *e2eCluster {
	t.Helper()
	c := &e2eCluster{t: t, dir: t.TempDir(), rpc: testutil.FreeAddr(t), rest: testutil.FreeAddr(t), tms: map[string]*running{}, tmArgs: map[string][]string{}, lifetime: 5 * time.Minute}
	c.jmArgs = []string{"jobmanager", "--rpc-address", c.rpc, "--rest-address", c.rest, "--state-dir", filepath.Join(c.dir, "jm"), "-v"}
	for _, kv := range conf {
		c.jmArgs = append(c.jmArgs, "-D", kv)
	}
	c.startJM()
	for i := range taskManagers {
		id := fmt.Sprintf("tm-%d", i)
		c.tmArgs[id] = []string{"taskmanager", "--jobmanager", c.rpc, "--slots", strconv.Itoa(slots), "--resource-id", id, "--metrics-address", "-", "-v"}
		c.startTM(id)
	}
	c.waitTaskManagers(taskManagers)
	return c
}

func (c *e2eCluster) startJM() {
	c.jm = startWeir(c.t, c.lifetime, c.jmArgs...)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + c.rest + "/overview"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("JobManager did not serve REST; stderr:\n%s", tail(c.jm.stderr(), 3000))
}

func (c *e2eCluster) startTM(id string) { c.tms[id] = startWeir(c.t, c.lifetime, c.tmArgs[id]...) }

// taskManagers returns GET /taskmanagers.
func (c *e2eCluster) taskManagers() []struct {
	ID        string `json:"id"`
	Slots     int    `json:"slotsNumber"`
	FreeSlots int    `json:"freeSlots"`
} {
	var body struct {
		TaskManagers []struct {
			ID        string `json:"id"`
			Slots     int    `json:"slotsNumber"`
			FreeSlots int    `json:"freeSlots"`
		} `json:"taskmanagers"`
	}
	resp, err := http.Get("http://" + c.rest + "/taskmanagers")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		c.t.Fatal(err)
	}
	return body.TaskManagers
}

// waitTaskManagers waits until n TaskManagers are registered.
func (c *e2eCluster) waitTaskManagers(n int) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if len(c.taskManagers()) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("%d TaskManagers did not register; JobManager stderr:\n%s", n, tail(c.jm.stderr(), 3000))
}

// logs returns every process's stderr, for a failure message.
func (c *e2eCluster) logs() string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- jobmanager\n%s\n", tail(c.jm.stderr(), 4000))
	for id, r := range c.tms {
		fmt.Fprintf(&b, "--- %s\n%s\n", id, tail(r.stderr(), 2000))
	}
	return b.String()
}

// demoArgs are the arguments of a demo submitted to the cluster.
func (c *e2eCluster) demoArgs(events int, rate int, parallelism int, extra ...string) ([]string, string) {
	out := filepath.Join(c.dir, "out")
	args := []string{"run", "demo", "--jobmanager", c.rpc, "--events", strconv.Itoa(events), "--rate", strconv.Itoa(rate),
		"--parallelism", strconv.Itoa(parallelism), "--checkpoint-interval", "200ms", "--out", out,
		"-D", "restart-strategy.type=fixed-delay", "-D", "restart-strategy.fixed-delay.attempts=1000",
		"-D", "restart-strategy.fixed-delay.delay=100ms"}
	return append(args, extra...), out
}

// TestClusterKillTaskManagers: a JobManager and three TaskManagers (two
// slots each) run the demo at parallelism 4 while, ten times, a random
// TaskManager is SIGKILLed at a random moment and started again. The
// committed output equals the failure-free output exactly.
func TestClusterKillTaskManagers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of four processes for tens of seconds")
	}
	killTaskManagers(t, 3_000_000, 10)
}

// TestClusterKillTaskManagersUnaligned is the same with unaligned
// checkpoints: barriers overtake the records in flight between the
// TaskManagers, which are stored as channel state and replayed on
// restore.
func TestClusterKillTaskManagersUnaligned(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of four processes for seconds")
	}
	c := killTaskManagers(t, 1_000_000, 5, "-D", "execution.checkpointing.unaligned.enabled=true")
	if !c.sawUnaligned.Load() {
		t.Fatalf("no checkpoint in the REST history was unaligned")
	}
}

// TestClusterKillTaskManagersIncremental: the kills with the lsm state
// backend and incremental checkpoints, and then the job cancelled rather
// than finished (a finished job removes its checkpoint folder, shared
// area included, so only an unfinished one shows leaks). A TaskManager
// killed mid-upload or a checkpoint cancelled by a kill must leave no
// chk-N without metadata and no file in the shared area that no kept
// checkpoint references; what was committed is part of the failure-free
// output, nothing twice.
func TestClusterKillTaskManagersIncremental(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of four processes for seconds")
	}
	const events, kills = 50_000_000, 5
	rng := killRand(t, 1)
	c := startE2ECluster(t, 3, 2)
	args, out := c.demoArgs(events, 150_000, 4, "--state-backend", "lsm", "-D", "state.backend.incremental=true")
	client := startWeir(t, c.lifetime, args...)
	c.killRandomly(client, rng, kills, 300*time.Millisecond)
	time.Sleep(time.Second) // a checkpoint or two after the last restore
	wantExit(t, runWeir(t, 30*time.Second, "cancel", "demo", "--jobmanager", c.rpc), 0)
	res := c.waitOrDump(client, time.Minute)
	if res.code == 0 {
		t.Fatalf("the cancelled job's client exited 0\n%s", tail(res.stderr, 2000))
	}
	want := map[string]int{}
	got := committed(t, out)
	for _, l := range demo.Expected(int64(len(got)+1_000_000), demoKeys) {
		want[l]++
	}
	if x := extras(want, got); len(x) > 0 {
		t.Fatalf("%d committed lines are not in the failure-free output or are duplicated, first %q", len(x), x[0])
	}
	assertNoOrphanCheckpoints(t, c.dir)
	assertNoOrphans(t, c.dir, 3)
	if t.Failed() {
		t.Log(c.logs())
	}
	t.Logf("%d lines committed before the cancel, after %d kills; %d region restores", len(got), kills, strings.Count(c.jm.stderr(), `msg=restoring`))
}

func killTaskManagers(t *testing.T, events, kills int, extra ...string) *e2eCluster {
	rng := killRand(t, 1)
	c := startE2ECluster(t, 3, 2)
	args, out := c.demoArgs(events, 150_000, 4, extra...)
	client := startWeir(t, c.lifetime, args...)
	stopWatch := c.watchCheckpoints("demo")
	defer stopWatch()
	c.killRandomly(client, rng, kills, 300*time.Millisecond)
	res := client.wait()
	if res.code != 0 {
		t.Fatalf("weir run exited %d; stderr:\n%s\n%s", res.code, tail(res.stderr, 3000), c.logs())
	}
	if d := demo.Diff(demo.Expected(int64(events), demoKeys), committed(t, out)); d != "" {
		t.Fatalf("after %d TaskManager kills: %s", kills, d)
	}
	assertNoInProgress(t, out)
	assertNoOrphanCheckpoints(t, c.dir)
	assertNoOrphans(t, c.dir, 3)
	jmLog := c.jm.stderr()
	restores := strings.Count(jmLog, `msg=restoring`)
	t.Logf("%d events exact after %d kills; %d region restores", events, kills, restores)
	if restores < kills/2 {
		t.Errorf("only %d restores for %d kills: the kills missed the job", restores, kills)
	}
	return c
}

// killRandomly SIGKILLs one of the cluster's three TaskManagers kills
// times, each after at least min plus up to 1.5 s, and starts it again.
// The TaskManager killed last comes back empty (its tasks moved to the
// free slots of the others), so each kill picks one of the other two: with
// 4 tasks in 6 slots they hold every task, and no kill misses.
func (c *e2eCluster) killRandomly(client *running, rng *rand.Rand, kills int, min time.Duration) {
	t := c.t
	prev := -1
	for k := range kills {
		delay := min + time.Duration(rng.Int64N(int64(1500*time.Millisecond)))
		select {
		case <-client.done:
			t.Fatalf("the job ended after %d of %d kills; client stderr:\n%s\n%s", k, kills, tail(client.stderr(), 3000), c.logs())
		case <-time.After(delay):
		}
		n := rng.IntN(3)
		if prev >= 0 {
			n = (prev + 1 + rng.IntN(2)) % 3
		}
		prev = n
		id := fmt.Sprintf("tm-%d", n)
		c.tms[id].kill()
		t.Logf("kill %d: SIGKILL %s after %s", k+1, id, delay)
		c.startTM(id)
	}
}

// watchCheckpoints polls the job's checkpoint history on the JobManager's
// REST API until stopped, noting whether any checkpoint was unaligned.
func (c *e2eCluster) watchCheckpoints(job string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			resp, err := http.Get("http://" + c.rest + "/jobs/" + job + "/checkpoints")
			if err != nil {
				continue
			}
			var body struct {
				History []struct {
					Type string `json:"checkpoint_type"`
				} `json:"history"`
			}
			json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			for _, h := range body.History {
				if h.Type == "UNALIGNED_CHECKPOINT" {
					c.sawUnaligned.Store(true)
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

// TestClusterKillJobManager SIGKILLs the JobManager while a job runs and
// starts it again on the same state folder and address: the TaskManagers
// register again, the client follows the job on, the job resumes from its
// newest checkpoint, and the committed output is exact.
func TestClusterKillJobManager(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of three processes for seconds")
	}
	const events = 1_000_000
	c := startE2ECluster(t, 2, 2)
	args, out := c.demoArgs(events, 200_000, 2)
	client := startWeir(t, c.lifetime, args...)
	time.Sleep(2 * time.Second)
	c.jm.kill()
	t.Log("JobManager SIGKILLed")
	time.Sleep(300 * time.Millisecond)
	c.startJM()
	res := client.wait()
	if res.code != 0 {
		t.Fatalf("weir run exited %d; stderr:\n%s\n%s", res.code, tail(res.stderr, 3000), c.logs())
	}
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatalf("after a JobManager kill: %s", d)
	}
	assertNoInProgress(t, out)
	if !strings.Contains(c.jm.stderr(), "job recovered") {
		t.Errorf("the restarted JobManager did not recover the job:\n%s", c.logs())
	}
}

// TestClusterStall stops one TaskManager with SIGSTOP for 4 s: it neither
// reads its channels nor answers heartbeats (the timeout is longer). The
// producers on the other TaskManagers stop within their credits, so their
// memory stays flat; checkpoints time out cleanly; after SIGCONT the job
// continues and its output is exact.
func TestClusterStall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of four processes for seconds")
	}
	const events = 1_500_000
	c := startE2ECluster(t, 2, 1, "heartbeat.timeout=60s")
	args, out := c.demoArgs(events, 150_000, 2, "-D", "execution.checkpointing.timeout=1s",
		"-D", "execution.checkpointing.tolerable-failed-checkpoints=100")
	client := startWeir(t, c.lifetime, args...)
	time.Sleep(2 * time.Second)
	stalled, other := c.tms["tm-0"], c.tms["tm-1"]
	before := rssOf(t, other.cmd.Process.Pid)
	if err := stalled.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	peak := before
	for range 40 {
		time.Sleep(100 * time.Millisecond)
		peak = max(peak, rssOf(t, other.cmd.Process.Pid))
	}
	if err := stalled.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("the other TaskManager's RSS: %d MiB before the stall, peak %d MiB during 4 s of it", before>>20, peak>>20)
	if growth := peak - before; growth > 32<<20 {
		t.Errorf("the other TaskManager grew %d MiB while its consumer stalled: producers are not bounded by credits", growth>>20)
	}
	res := client.wait()
	if res.code != 0 {
		t.Fatalf("weir run exited %d; stderr:\n%s\n%s", res.code, tail(res.stderr, 3000), c.logs())
	}
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatalf("after a stall: %s", d)
	}
	jmLog := c.jm.stderr()
	if strings.Contains(jmLog, "TaskManager lost") {
		t.Errorf("the stalled TaskManager was declared lost; the stall was meant to stay under heartbeat.timeout")
	}
	// Checkpoints expired during the stall and completed again after it.
	aborted := strings.LastIndex(jmLog, `msg="checkpoint aborted"`)
	if aborted < 0 {
		t.Fatalf("no checkpoint timed out during a 4 s stall with a 1 s checkpoint timeout:\n%s", tail(jmLog, 3000))
	}
	if !strings.Contains(jmLog[aborted:], `msg="checkpoint completed"`) {
		t.Errorf("no checkpoint completed after the stall")
	}
}

// rssOf reads a process's resident set size from /proc.
func rssOf(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// TestClusterStallBeyondHeartbeatTimeout stops a TaskManager with SIGSTOP
// for longer than heartbeat.timeout: the JobManager declares it lost and
// redeploys its tasks on the free slot of another TaskManager while the
// stopped one still holds its old tasks. After SIGCONT those tasks are
// zombies for a moment, until their TaskManager notices that its session
// ended, cancels them and registers again; the committed output must stay
// exact.
func TestClusterStallBeyondHeartbeatTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of four processes for seconds")
	}
	const events = 1_000_000
	c := startE2ECluster(t, 3, 1, "heartbeat.interval=200ms", "heartbeat.timeout=1s")
	args, out := c.demoArgs(events, 150_000, 2)
	client := startWeir(t, c.lifetime, args...)
	time.Sleep(1500 * time.Millisecond)
	var stalled string
	for _, tm := range c.taskManagers() {
		if tm.FreeSlots == 0 {
			stalled = tm.ID
			break
		}
	}
	if stalled == "" {
		t.Fatalf("no TaskManager runs tasks: %+v", c.taskManagers())
	}
	p := c.tms[stalled].cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s stopped for 3 s with heartbeat.timeout 1s", stalled)
	res := client.wait()
	if res.code != 0 {
		t.Fatalf("weir run exited %d; stderr:\n%s\n%s", res.code, tail(res.stderr, 3000), c.logs())
	}
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatalf("after a stall beyond the heartbeat timeout: %s\n%s", d, c.logs())
	}
	assertNoInProgress(t, out)
	jmLog := c.jm.stderr()
	if !strings.Contains(jmLog, "no heartbeat for 1s") {
		t.Errorf("the stalled TaskManager was not declared lost by heartbeat timeout:\n%s", tail(jmLog, 3000))
	}
	if !strings.Contains(c.tms[stalled].stderr(), "JobManager lost") {
		t.Errorf("the stalled TaskManager did not notice that its session ended:\n%s", tail(c.tms[stalled].stderr(), 3000))
	}
}

// TestClusterStopWithSavepointAndRescale takes a savepoint of a job on the
// cluster and stops it with another (its 2PC sinks commit), addressing the
// JobManager by its rpc address as every client command does, and resumes
// the stop savepoint under a new name at another parallelism into the same
// output folder: the two runs together commit exactly the failure-free
// output.
func TestClusterStopWithSavepointAndRescale(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of two processes for seconds")
	}
	const events = 1_000_000
	c := startE2ECluster(t, 1, 3)
	args, out := c.demoArgs(events, 100_000, 2, "--detached")
	if r := runWeir(t, time.Minute, args...); r.code != 0 {
		t.Fatalf("submit: exit %d\n%s", r.code, r.stderr)
	}
	time.Sleep(1000 * time.Millisecond)
	// Under the JobManager's default state.savepoints.dir.
	saves := filepath.Join(c.dir, "jm", "savepoints")
	r := runWeir(t, time.Minute, "savepoint", "demo", "--jobmanager", c.rpc, "--target", saves)
	if r.code != 0 || !strings.HasPrefix(strings.TrimSpace(r.stdout), filepath.Join(saves, "savepoint-demo-")) {
		t.Fatalf("savepoint --jobmanager: exit %d, printed %q\n%s\n%s", r.code, r.stdout, r.stderr, c.logs())
	}
	time.Sleep(500 * time.Millisecond)
	r = runWeir(t, time.Minute, "stop", "demo", "--jobmanager", c.rpc, "--savepoint", saves)
	if r.code != 0 {
		t.Fatalf("stop: exit %d\n%s\n%s", r.code, r.stderr, c.logs())
	}
	savepoint := strings.TrimSpace(r.stdout)
	first := len(committed(t, out))
	if first == 0 || first >= events {
		t.Fatalf("the stopped run committed %d of %d lines: stop earlier or later", first, events)
	}
	resume, _ := c.demoArgs(events, 0, 3, "--from", savepoint, "--job-name", "demo-resumed")
	if r := runWeir(t, time.Minute, resume...); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stderr, c.logs())
	}
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatalf("stop with savepoint at p=2 (%d lines), resume at p=3: %s", first, d)
	}
	assertNoInProgress(t, out)
	t.Logf("stopped at p=2 after %d lines with %s, resumed at p=3 to %d", first, savepoint, events)
}

// waitOrDump waits up to d for the client to end by itself. If it has not,
// the job hangs: every process of the cluster gets SIGQUIT (a Go process
// prints all its goroutines' stacks and exits), their whole stderr goes to
// a file under the system's temporary directory that outlives the test,
// and the test fails naming it.
func (c *e2eCluster) waitOrDump(client *running, d time.Duration) result {
	c.t.Helper()
	select {
	case <-client.done:
		return client.wait()
	case <-time.After(d):
	}
	procs := map[string]*running{"jobmanager": c.jm, "client": client}
	for id, r := range c.tms {
		procs[id] = r
	}
	for _, r := range procs {
		r.cmd.Process.Signal(syscall.SIGQUIT)
	}
	var b strings.Builder
	for id, r := range procs {
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			r.kill()
		}
		fmt.Fprintf(&b, "===== %s\n%s\n", id, r.stderr())
	}
	f, err := os.CreateTemp("", "weir-hang-*.log")
	if err == nil {
		f.WriteString(b.String())
		f.Close()
		c.t.Fatalf("the job did not end within %s; every process's stderr and goroutines: %s\nclient (end):\n%s", d, f.Name(), tail(client.stderr(), 3000))
	}
	c.t.Fatalf("the job did not end within %s (and its dump could not be written: %v); client (end):\n%s\n%s", d, err, tail(client.stderr(), 3000), c.logs())
	return result{}
}
