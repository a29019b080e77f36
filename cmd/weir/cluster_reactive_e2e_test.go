package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// reactiveInfo is GET /jobs/{id}/autoscaler's reactive part.
type reactiveInfo struct {
	Rescales  int64 `json:"rescales"`
	Decisions []struct {
		At          time.Time `json:"at"`
		Kind        string    `json:"kind"`
		From        int       `json:"from"`
		To          int       `json:"to"`
		Parallelism int       `json:"parallelism"`
		Slots       int       `json:"slots"`
		Why         string    `json:"why"`
		Error       string    `json:"error"`
	} `json:"decisions"`
}

// reactive returns the job's reactive-mode record; ok false while the
// job does not answer.
func (c *e2eCluster) reactive(job string) (reactiveInfo, bool) {
	var body struct {
		Reactive *reactiveInfo `json:"reactive"`
	}
	resp, err := http.Get("http://" + c.rest + "/jobs/" + job + "/autoscaler")
	if err != nil {
		return reactiveInfo{}, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil || body.Reactive == nil {
		return reactiveInfo{}, false
	}
	return *body.Reactive, true
}

// waitReactive waits until the job has carried out rescales and its
// latest run runs at parallelism p; it returns when that run started.
func (c *e2eCluster) waitReactive(job string, rescales int64, p int, within time.Duration) time.Time {
	c.t.Helper()
	deadline := time.Now().Add(within)
	var last reactiveInfo
	for time.Now().Before(deadline) {
		if info, ok := c.reactive(job); ok {
			last = info
			if info.Rescales >= rescales {
				for i := len(info.Decisions) - 1; i >= 0; i-- {
					if d := info.Decisions[i]; d.Kind == "running" {
						if d.Parallelism == p {
							return d.At
						}
						break
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	var b strings.Builder
	for _, d := range last.Decisions {
		fmt.Fprintf(&b, "  %s %s p=%d %d->%d slots=%d: %s %s\n", d.At.Format("15:04:05.000"), d.Kind, d.Parallelism, d.From, d.To, d.Slots, d.Why, d.Error)
	}
	c.t.Fatalf("no run at parallelism %d after %d rescales within %s; reactive decisions (%d rescales):\n%s\n%s", p, rescales, within, last.Rescales, b.String(), c.logs())
	return time.Time{}
}

// TestClusterReactive runs the demo on a JobManager in reactive mode
// (scheduler-mode: reactive) with one TaskManager of two slots: a second
// TaskManager registers and the job scales up in place to its four
// slots; the second is SIGKILLed and, after the wait timeout, the job is
// started again at the two slots that remain and runs to its end. The
// committed output equals the failure-free output exactly.
func TestClusterReactive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of three processes for seconds")
	}
	const events = 1_500_000
	const wait = 3 * time.Second
	c := startE2ECluster(t, 1, 2, "scheduler-mode=reactive",
		"jobmanager.adaptive-scheduler.resource-stabilization-timeout=1s",
		"jobmanager.adaptive-scheduler.resource-wait-timeout="+wait.String(),
		"heartbeat.interval=300ms", "heartbeat.timeout=3s")
	args, out := c.demoArgs(events, 100_000, 1)
	client := startWeir(t, 2*time.Minute, args...)
	// Submitted at 1 on a cluster of 2 slots: it scales up to 2 first.
	c.waitReactive("demo", 1, 2, 30*time.Second)

	c.tmArgs["tm-1"] = []string{"taskmanager", "--jobmanager", c.rpc, "--slots", "2", "--resource-id", "tm-1", "--metrics-address", "-", "-v"}
	joined := time.Now()
	c.startTM("tm-1")
	up := c.waitReactive("demo", 2, 4, 30*time.Second)
	t.Logf("scaled up to 4 %s after the second TaskManager started (stabilization 1 s)", up.Sub(joined).Round(time.Millisecond))

	// The slots decide the parallelism: a rescale by hand is refused.
	if r := runWeir(t, time.Minute, "rescale", "demo", "--jobmanager", c.rpc, "--parallelism", "1"); r.code == 0 || !strings.Contains(r.stderr, "scheduler-mode reactive") {
		t.Fatalf("weir rescale of a reactive job: exit %d\n%s", r.code, r.stderr)
	}

	time.Sleep(time.Second) // a checkpoint or two at 4
	if !c.tms["tm-1"].kill() {
		t.Fatalf("tm-1 had exited before the kill\n%s", c.logs())
	}
	killed := time.Now()
	down := c.waitReactive("demo", 3, 2, 30*time.Second)
	if d := down.Sub(killed); d < wait {
		t.Fatalf("scaled down %s after the kill, before the wait timeout %s", d, wait)
	}
	t.Logf("running at 2 again %s after tm-1 was killed (wait timeout %s)", down.Sub(killed).Round(time.Millisecond), wait)

	// The pause of each rescale: from the decision to the run at the
	// new parallelism starting (its tasks then restore and run).
	info, _ := c.reactive("demo")
	var asked time.Time
	for _, d := range info.Decisions {
		switch d.Kind {
		case "scale-up", "scale-down":
			asked = d.At
			t.Logf("%s %d -> %d on %d slots: %s", d.Kind, d.From, d.To, d.Slots, d.Why)
		case "running":
			if !asked.IsZero() {
				t.Logf("  running at %d %s after the decision", d.Parallelism, d.At.Sub(asked).Round(time.Millisecond))
			}
			asked = time.Time{}
		}
	}
	if info.Rescales != 3 {
		t.Errorf("%d reactive rescales, want 3 (1 → 2 → 4 → 2)", info.Rescales)
	}
	if m := metricLine(t, c.rest, "weir_jobmanager_job_numberOfReactiveRescales"); !strings.HasSuffix(m, " 3") {
		t.Errorf("metric: %q, want the 3 rescales", m)
	}

	res := c.waitOrDump(client, 2*time.Minute)
	if res.code != 0 {
		t.Fatalf("client: exit %d\n%s\n%s", res.code, res.stderr, c.logs())
	}
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatalf("reactive 1 → 2 → 4 → 2: %s\n%s", d, c.logs())
	}
	assertNoInProgress(t, out)
	logPauses(t, c.jm.stderr())
}

// metricLine returns the first line of GET /metrics at rest that starts
// with name.
func metricLine(t *testing.T, rest, name string) string {
	resp, err := http.Get("http://" + rest + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, name) {
			return l
		}
	}
	return ""
}

// logPauses logs, for each reactive rescale in a JobManager's log, the
// time from the decision to the new run's start (in place: after the old
// run's checkpoint) and to the first checkpoint of the new run that
// completed: by then it was deployed, restored and ran (a checkpoint is
// triggered every interval, 200 ms here, once every task runs).
func logPauses(t *testing.T, log string) {
	timeRE := regexp.MustCompile(`^time=(\S+) `)
	var asked, started time.Time
	var what string
	for _, l := range strings.Split(log, "\n") {
		m := timeRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			continue
		}
		switch {
		case strings.Contains(l, `msg="reactive: scale-`):
			asked, what = at, l[strings.Index(l, "msg="):]
			what = what[:min(len(what), 60)]
		case !asked.IsZero() && strings.Contains(l, `msg="reactive: job running"`):
			started = at
		case !started.IsZero() && strings.Contains(l, `msg="checkpoint completed"`):
			t.Logf("%s…: new run %s after the decision, its first checkpoint completed %s after the decision", what, started.Sub(asked).Round(time.Millisecond), at.Sub(asked).Round(time.Millisecond))
			asked, started = time.Time{}, time.Time{}
		}
	}
}

// TestReactiveRefused: scheduler-mode reactive where it makes no sense is
// refused at once with what to do: on a local run, on a job submitted to
// a JobManager (the key is the JobManager's), and on a JobManager whose
// wait for lost slots outlasts slot.request.timeout.
func TestReactiveRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "demo", "--events", "10", "-D", "scheduler-mode=reactive"}, "a local run has a fixed set"},
		{[]string{"run", "demo", "--events", "10", "--jobmanager", "127.0.0.1:1", "-D", "scheduler-mode=reactive"}, "start weir jobmanager with -D scheduler-mode=reactive"},
		{[]string{"jobmanager", "--state-dir", t.TempDir(), "--rpc-address", "127.0.0.1:0", "--rest-address", "", "-D", "scheduler-mode=reactive", "-D", "jobmanager.adaptive-scheduler.resource-wait-timeout=5min"}, "must be below slot.request.timeout 5 min"},
	} {
		r := runWeir(t, 30*time.Second, c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("weir %s: exit %d, stderr %q; want an error saying %q", strings.Join(c.args, " "), r.code, tail(r.stderr, 600), c.want)
		}
	}
}
