package bench

// The cluster half of bench shuffle: a JobManager and two TaskManagers
// started from this binary on free loopback ports, keyed-sum submitted to
// them, its time taken from the JobManager and its remote traffic from
// the TaskManagers' /metrics.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/jobstatus"
)

// benchTaskManagers is how many TaskManager processes bench shuffle starts,
// with one slot each: keyed-sum at parallelism 2 then has one source and
// one aggregator subtask on each, and the keyed exchange crosses TCP for
// the records whose account belongs to the other one.
const benchTaskManagers = 2

// benchCluster is the processes of one bench shuffle run.
type benchCluster struct {
	exe    string
	dir    string
	rpc    string
	rest   string
	procs  []*benchProc
	client *cluster.Client
	// metrics are the TaskManagers' /metrics addresses.
	metrics []string
}

// benchProc is one started process, its stderr kept in a file.
type benchProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startBenchCluster starts the JobManager and the TaskManagers in dir. With
// profileDir, each TaskManager writes a CPU profile of its whole life to
// profileDir/<resource id>.pprof (WEIR_CPUPROFILE).
func startBenchCluster(ctx context.Context, dir, profileDir string) (_ *benchCluster, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench shuffle: find own binary to start the cluster: %w", err)
	}
	c := &benchCluster{exe: exe, dir: dir}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	if c.rpc, err = freeLoopbackAddr(); err != nil {
		return nil, err
	}
	if c.rest, err = freeLoopbackAddr(); err != nil {
		return nil, err
	}
	if err := c.start("jobmanager", nil, "jobmanager", "--rpc-address", c.rpc, "--rest-address", c.rest, "--state-dir", filepath.Join(dir, "jm")); err != nil {
		return nil, err
	}
	for i := range benchTaskManagers {
		id := fmt.Sprintf("tm-%d", i)
		var env []string
		if profileDir != "" {
			env = append(env, "WEIR_CPUPROFILE="+filepath.Join(profileDir, id+".pprof"))
		}
		if err := c.start(id, env, "taskmanager", "--jobmanager", c.rpc, "--slots", "1", "--resource-id", id, "--metrics-address", "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	if err := c.waitTaskManagers(ctx); err != nil {
		return nil, err
	}
	c.client, err = cluster.Dial(ctx, cluster.ClientConfig{Address: c.rpc, DialTimeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("bench shuffle: %w\n%s", err, c.logs())
	}
	return c, nil
}

func (c *benchCluster) start(name string, env []string, args ...string) error {
	log := filepath.Join(c.dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return fmt.Errorf("bench shuffle: %w", err)
	}
	cmd := exec.Command(c.exe, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("bench shuffle: start %s: %w", name, err)
	}
	p := &benchProc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	return nil
}

// waitTaskManagers waits until the JobManager's REST API lists every
// TaskManager with its metrics address.
func (c *benchCluster) waitTaskManagers(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var body struct {
			TaskManagers []struct {
				Metrics string `json:"metricsAddress"`
			} `json:"taskmanagers"`
		}
		if err := c.getJSON(ctx, "/taskmanagers", &body); err == nil && len(body.TaskManagers) == benchTaskManagers {
			c.metrics = c.metrics[:0]
			for _, tm := range body.TaskManagers {
				if tm.Metrics != "" {
					c.metrics = append(c.metrics, tm.Metrics)
				}
			}
			if len(c.metrics) == benchTaskManagers {
				return nil
			}
		}
		for _, p := range c.procs {
			select {
			case <-p.done:
				return fmt.Errorf("bench shuffle: %s exited while the cluster started\n%s", p.name, c.logs())
			default:
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("bench shuffle: %d TaskManagers did not register within 30s\n%s", benchTaskManagers, c.logs())
}

func (c *benchCluster) getJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.rest+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// runKeyedSum submits keyed-sum run r with `weir run keyed-sum
// --jobmanager`, which follows it and checks the sinks' count, and
// measures it. The time is the JobManager's: from the job's RUNNING (its
// JobStatus start, read from GET /jobs/{id} while it runs) to its end (the
// job record's end, from the List call). RUNNING is set once both
// TaskManagers built the job and its tasks are being deployed, so the
// time covers deploying and starting the tasks, opening the TCP channels,
// every record through sources, shuffle, aggregation and sink, and the
// tasks' FINISHED reports; not the submission, graph building or slot
// allocation before. The remote traffic is the difference of the
// TaskManagers' data plane counters before and after.
func (c *benchCluster) runKeyedSum(ctx context.Context, r int, records, keys int64) (shuffleRun, error) {
	name := fmt.Sprintf("keyed-sum-%d", r)
	before, err := c.traffic(ctx)
	if err != nil {
		return shuffleRun{}, err
	}
	cmd := exec.CommandContext(ctx, c.exe, "run", "keyed-sum", "--jobmanager", c.rpc, "--job-name", name,
		"--records", strconv.FormatInt(records, 10), "--keys", strconv.FormatInt(keys, 10), "--parallelism", "2",
		"--checkpoint-interval", "0", "--count-dir", filepath.Join(c.dir, name+"-counts"), "--quiet")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return shuffleRun{}, fmt.Errorf("bench shuffle: submit keyed-sum: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	start, err := c.waitRunning(ctx, name, exited)
	if err != nil {
		return shuffleRun{}, fmt.Errorf("%w; weir run said:\n%s", err, tailString(out.String(), 2000))
	}
	if err := <-exited; err != nil {
		return shuffleRun{}, fmt.Errorf("bench shuffle: weir run keyed-sum on the cluster: %w; it said:\n%s\n%s", err, tailString(out.String(), 2000), c.logs())
	}
	end, err := c.ended(ctx, name)
	if err != nil {
		return shuffleRun{}, err
	}
	after, err := c.traffic(ctx)
	if err != nil {
		return shuffleRun{}, err
	}
	return shuffleRun{
		Seconds:       end.Sub(start).Seconds(),
		RemoteBytes:   int64(after.bytes - before.bytes),
		RemoteRecords: int64(after.records - before.records),
	}, nil
}

// waitRunning polls GET /jobs/{id} until the job has a start time (it is
// RUNNING) and returns it. It stops polling then, so as not to take CPU
// from the job; exited reports a client that ended first.
func (c *benchCluster) waitRunning(ctx context.Context, job string, exited <-chan error) (time.Time, error) {
	for {
		var body struct {
			State string `json:"state"`
			Start int64  `json:"start-time"`
		}
		if err := c.getJSON(ctx, "/jobs/"+job, &body); err == nil && body.Start > 0 {
			return time.UnixMilli(body.Start), nil
		}
		select {
		case err := <-exited:
			return time.Time{}, fmt.Errorf("bench shuffle: job %s ended (client: %v) before the REST API showed it RUNNING: give more --records", job, err)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// ended returns when the FINISHED job ended, from the JobManager's record.
func (c *benchCluster) ended(ctx context.Context, job string) (time.Time, error) {
	jobs, err := c.client.List(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("bench shuffle: list jobs: %w", err)
	}
	for _, j := range jobs {
		if j.GetName() != job {
			continue
		}
		if jobstatus.JobState(j.GetState()) != jobstatus.StateFinished || j.GetEndUnixMillis() == 0 {
			return time.Time{}, fmt.Errorf("bench shuffle: job %s is %s, not FINISHED: %s", job, j.GetState(), j.GetFailure())
		}
		return time.UnixMilli(j.GetEndUnixMillis()), nil
	}
	return time.Time{}, fmt.Errorf("bench shuffle: the JobManager does not list job %s", job)
}

// remoteTraffic is the TaskManagers' data plane counters, summed.
type remoteTraffic struct{ bytes, records float64 }

// traffic scrapes every TaskManager's /metrics for what it sent to the
// others (weir_taskmanager_num{Bytes,Records}OutRemote).
func (c *benchCluster) traffic(ctx context.Context) (remoteTraffic, error) {
	var sum remoteTraffic
	for _, addr := range c.metrics {
		m, err := scrapeMetrics(ctx, addr, "weir_taskmanager_numBytesOutRemote", "weir_taskmanager_numRecordsOutRemote")
		if err != nil {
			return sum, fmt.Errorf("bench shuffle: TaskManager metrics at %s: %w", addr, err)
		}
		sum.bytes += m["weir_taskmanager_numBytesOutRemote"]
		sum.records += m["weir_taskmanager_numRecordsOutRemote"]
	}
	return sum, nil
}

// scrapeMetrics reads the named unlabelled series of a Prometheus text
// endpoint; a missing one is an error.
func scrapeMetrics(ctx context.Context, addr string, names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("no series %s", n)
		}
	}
	return out, nil
}

// stop ends the processes with SIGTERM (a TaskManager then writes its CPU
// profile), SIGKILL after 10 s.
func (c *benchCluster) stop() {
	if c.client != nil {
		c.client.Close()
	}
	var wg sync.WaitGroup
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}()
	}
	wg.Wait()
}

// logs returns the end of every process's log, for an error message.
func (c *benchCluster) logs() string {
	var b strings.Builder
	for _, p := range c.procs {
		data, _ := os.ReadFile(p.log)
		fmt.Fprintf(&b, "--- %s (%s)\n%s\n", p.name, p.log, tailString(string(data), 1500))
	}
	return b.String()
}

// freeLoopbackAddr returns a loopback address whose port was free a moment
// ago.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("bench shuffle: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
