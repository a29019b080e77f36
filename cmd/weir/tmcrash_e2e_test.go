package main

import (
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestClusterTaskManagerCrashBetweenBarrierAndAck: fault class 1 at its
// exact point. A TaskManager is SIGKILLed by its own crash hook
// (WEIR_TEST_TM_CRASH) at the sixth asynchronous snapshot its tasks take:
// after a checkpoint's barrier passed and before that task's
// acknowledgement. The checkpoint cannot complete; the job restores the
// previous one, once (one kill, one restore), on the TaskManager started
// again; the committed output equals the failure-free output exactly and
// the job's folder holds no checkpoint without its metadata.
func TestClusterTaskManagerCrashBetweenBarrierAndAck(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of three processes for seconds")
	}
	c := startE2ECluster(t, 0, 2)
	for _, id := range []string{"tm-0", "tm-1"} {
		c.tmArgs[id] = []string{"taskmanager", "--jobmanager", c.rpc, "--slots", "2", "--resource-id", id, "--metrics-address", "-", "-v"}
	}
	crashing := startWeirEnv(t, c.lifetime, []string{"WEIR_TEST_TM_CRASH=snapshot-async:6"}, c.tmArgs["tm-0"]...)
	c.tms["tm-0"] = crashing
	c.startTM("tm-1")
	c.waitTaskManagers(2)

	const events = 600_000
	args, out := c.demoArgs(events, 100_000, 4)
	client := startWeir(t, c.lifetime, args...)
	select {
	case <-crashing.done:
	case <-client.done:
		t.Fatalf("the job ended before tm-0 crashed\n%s", c.logs())
	case <-time.After(90 * time.Second):
		t.Fatalf("tm-0 did not reach its crash point in 90 s\n%s", c.logs())
	}
	if !strings.Contains(crashing.stderr(), `msg="crash point reached: killing the TaskManager" point=snapshot-async hit=6`) {
		t.Fatalf("tm-0 ended without its crash point\n%s", tail(crashing.stderr(), 3000))
	}
	c.startTM("tm-0") // again, without the hook
	res := client.wait()
	if res.code != 0 {
		t.Fatalf("weir run exited %d; stderr:\n%s\n%s", res.code, tail(res.stderr, 3000), c.logs())
	}
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatalf("after a crash between barrier and ack: %s", d)
	}
	assertNoInProgress(t, out)
	assertNoOrphanCheckpoints(t, c.dir)
	if n := strings.Count(c.jm.stderr(), `msg=restoring`); n != 1 {
		t.Errorf("%d restores for one crash, want 1\n%s", n, tail(c.jm.stderr(), 3000))
	}
}
