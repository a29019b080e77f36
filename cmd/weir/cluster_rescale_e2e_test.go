package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestClusterRescaleInPlace rescales the demo on a cluster of two
// TaskManagers from parallelism 2 to 3 and back to 1 while it runs,
// through 'weir rescale --jobmanager': the job takes a checkpoint and
// runs again from it in the same run, the JobManager reports each
// rescale's pause, and the committed output equals the failure-free
// output exactly. The attached client follows the job across both
// rescales to its end.
func TestClusterRescaleInPlace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of three processes for seconds")
	}
	const events = 400_000
	c := startE2ECluster(t, 2, 2)
	args, out := c.demoArgs(events, 80_000, 2)
	client := startWeir(t, 2*time.Minute, args...)
	printed := regexp.MustCompile(`^rescaled demo on checkpoint \d+: .*=\d`)
	for _, p := range []string{"3", "1"} {
		time.Sleep(1500 * time.Millisecond)
		r := runWeir(t, time.Minute, "rescale", "demo", "--jobmanager", c.rpc, "--parallelism", p)
		if r.code != 0 || !printed.MatchString(r.stdout) || !strings.Contains(r.stdout, "="+p) {
			t.Fatalf("rescale to %s: exit %d, printed %q\n%s\n%s", p, r.code, r.stdout, r.stderr, c.logs())
		}
		t.Logf("rescale to %s: %s", p, strings.TrimSpace(r.stdout))
	}
	res := c.waitOrDump(client, 2*time.Minute)
	if res.code != 0 {
		t.Fatalf("client: exit %d\n%s\n%s", res.code, res.stderr, c.logs())
	}
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatalf("rescaled 2 → 3 → 1 in place: %s\n%s", d, c.logs())
	}
	assertNoInProgress(t, out)
	pauses := regexp.MustCompile(`rescaled in place: running at the new parallelism.* pause=(\S+)`).FindAllStringSubmatch(c.jm.stderr(), -1)
	if len(pauses) != 2 {
		t.Errorf("the JobManager reported %d rescale pauses, want 2\n%s", len(pauses), c.logs())
	}
	for _, m := range pauses {
		t.Logf("rescale pause: %s", m[1])
	}
}

// TestClusterAutoscaler runs the demo on a cluster with the autoscaler
// on and a target utilization so low that any busy vertex is to be
// scaled up: the JobManager's autoscaler must rescale the job in place
// (GET /jobs/demo/autoscaler shows the rescale with its inputs), and the
// output stays exactly the failure-free one.
func TestClusterAutoscaler(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of three processes for seconds")
	}
	const events = 1_000_000
	// Task reports reach the JobManager with the heartbeats: often, so
	// that the short windows below see several.
	c := startE2ECluster(t, 2, 2, "heartbeat.interval=300ms", "heartbeat.timeout=10s")
	args, out := c.demoArgs(events, 40_000, 1,
		"-D", "job.autoscaler.enabled=true", "-D", "job.autoscaler.interval=300ms",
		"-D", "job.autoscaler.metrics.window=2s", "-D", "job.autoscaler.stabilization.interval=500ms",
		"-D", "job.autoscaler.target.utilization=0.005", "-D", "job.autoscaler.target.utilization.boundary=0.003",
		"-D", "job.autoscaler.scale-up.max-factor=2")
	client := startWeir(t, 2*time.Minute, args...)
	var info struct {
		Enabled   bool  `json:"enabled"`
		Rescales  int64 `json:"rescales"`
		Decisions []struct {
			Rescale  bool `json:"rescale"`
			Vertices []struct {
				ID       string `json:"id"`
				From, To int
				Why      string `json:"why"`
			} `json:"vertices"`
		} `json:"decisions"`
	}
	deadline := time.Now().Add(30 * time.Second)
	last := ""
	for info.Rescales == 0 {
		if time.Now().After(deadline) {
			var lines []string
			for _, l := range strings.Split(c.jm.stderr(), "\n") {
				if (strings.Contains(l, "autoscal") || strings.Contains(l, "job started") || strings.Contains(l, "rror")) && !strings.Contains(l, "rest: request") {
					lines = append(lines, l)
				}
			}
			t.Fatalf("no autoscaler rescale within 30 s (client: %s): %s\nthe JobManager's autoscaler lines:\n%s\n%s", tail(client.stderr(), 2000), tail(last, 3000), strings.Join(lines[max(0, len(lines)-20):], "\n"), c.logs())
		}
		time.Sleep(200 * time.Millisecond)
		resp, err := http.Get("http://" + c.rest + "/jobs/demo/autoscaler")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(body, &info); err != nil || resp.StatusCode != http.StatusOK {
			continue
		}
		last = string(body)
	}
	if !info.Enabled || len(info.Decisions) == 0 {
		t.Fatalf("autoscaler info: %+v", info)
	}
	t.Logf("autoscaler rescaled %d times; decisions %+v", info.Rescales, info.Decisions[len(info.Decisions)-1])
	res := c.waitOrDump(client, 2*time.Minute)
	if res.code != 0 {
		t.Fatalf("client: exit %d\n%s\n%s", res.code, res.stderr, c.logs())
	}
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatalf("autoscaled: %s\n%s", d, c.logs())
	}
}
