package demo_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestExactlyOnceOverRemoteChannels runs the demo in local mode with 2
// and 3 TaskManagers, each with its own data plane on loopback (subtask i
// on TaskManager i mod n): its keyed exchange crosses TCP encoded, with
// failures injected at every fault point. The committed output must equal
// the failure-free output exactly, and records must really have crossed
// TCP, or the test proves nothing about remote channels.
func TestExactlyOnceOverRemoteChannels(t *testing.T) {
	const (
		n, k     = 60_000, 97
		failures = 4
	)
	want := demo.Expected(n, k)
	for _, c := range []struct{ p, tms int }{{2, 2}, {3, 3}, {4, 3}} {
		t.Run(fmt.Sprintf("p%d/tm%d", c.p, c.tms), func(t *testing.T) {
			r := newRun(t, n, k, c.p)
			r.rate = 1_000_000
			r.extra = map[string]string{config.LocalTaskManagers: fmt.Sprint(c.tms)}
			r.plan = faultPlan(failures, int64(53*c.p+c.tms), n, faults.AllPoints()...)
			res := r.execute(t, context.Background(), nil)
			if res.err != nil {
				t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
			}
			if got := res.inj.Fired(); got != failures || res.restarts != failures {
				t.Errorf("%d of %d failures fired, %d restarts: %v", got, failures, res.restarts, res.inj.Log())
			}
			if res.readErr != nil {
				t.Fatal(res.readErr)
			}
			if d := demo.Diff(want, res.lines); d != "" {
				t.Fatalf("committed output differs from the failure-free run: %s", d)
			}
			sent := hooks.Plan(res.env).Status.RemoteBytesSent.Load()
			if sent == 0 {
				t.Errorf("no record crossed TCP between the %d TaskManagers", c.tms)
			}
			t.Logf("%d lines exact; %d restarts (%d from a checkpoint); %d bytes crossed TCP; %v; fired %v",
				len(res.lines), res.restarts, strings.Count(res.log.String(), "msg=restoring"), sent, res.elapsed, res.inj.Log())
		})
	}
}
