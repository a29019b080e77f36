package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestClusterRescaleInPlace rescales the demo on a cluster of two
// TaskManagers from parallelism 2 to 3 and back to 1 while it runs,
// through 'weir rescale --jobmanager': the job stops on a final
// checkpoint and runs again from it in the same run, and the committed
// output equals the failure-free output exactly. The attached client
// follows the job across both rescales to its end.
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
}
