package main

import (
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

var weakClusterFlag = flag.Bool("weak-cluster", false, "run TestClusterWeakKillTaskManagers (SIGKILLs TaskManagers of a WEAKLY_CONSISTENT job)")

// weakLineRE parses the line a WEAKLY_CONSISTENT run ends with.
var weakLineRE = regexp.MustCompile(`weak failover: (\d+) failures, (\d+) task restarts, (\d+) replayed, (\d+) lost, (\d+) duplicated`)

// TestClusterWeakKillTaskManagers runs the demo in WEAKLY_CONSISTENT mode
// on a JobManager and three TaskManagers (two slots each, parallelism 4)
// and SIGKILLs a TaskManager three times. The in-flight logs and
// determinants a TaskManager held die with it: its tasks restart alone
// from their own snapshots on the free slots and rebuild their output logs
// from what those snapshots stored; their consumers elsewhere restart
// (their inputs broke) and are replayed from the producers' logs, the
// rebuilt ones included. With logs large enough nothing is lost, and the
// demo's restarted keyed tasks write straight into their sinks, so
// nothing can be re-emitted otherwise: the committed output must equal
// the failure-free run exactly (the client's --verify checks it against
// the JobManager's figures, the test again by event index).
func TestClusterWeakKillTaskManagers(t *testing.T) {
	if !*weakClusterFlag {
		// It hung once in CI (a job that did not finish after the kills,
		// under load; not yet understood): opt-in until it is.
		t.Skip("opt-in: go test ./cmd/weir -run TestClusterWeakKillTaskManagers -args -weak-cluster")
	}
	t.Run("stored-logs", func(t *testing.T) { weakKillTaskManagers(t, true) })
	// Without stored logs (execution.checkpointing.weak.in-flight-log.
	// snapshot false) a lost TaskManager's logs are gone: a rebuilt log
	// takes its numbering from its consumer's position and counts what it
	// cannot replay as lost. Nothing is re-emitted otherwise in the demo,
	// so the lost records must be exactly the missing lines.
	t.Run("no-stored-logs", func(t *testing.T) { weakKillTaskManagers(t, false) })
}

func weakKillTaskManagers(t *testing.T, stored bool) {
	const events, kills = 1_500_000, 3
	rng := killRand(t, 2)
	c := startE2ECluster(t, 3, 2)
	args, out := c.demoArgs(events, 150_000, 4, "-D", "execution.checkpointing.mode=WEAKLY_CONSISTENT", "--verify",
		"-D", fmt.Sprintf("execution.checkpointing.weak.in-flight-log.snapshot=%t", stored))
	client := startWeir(t, c.lifetime, args...)
	c.killRandomly(client, rng, kills, 1500*time.Millisecond)
	res := c.waitOrDump(client, 150*time.Second)
	if res.code != 0 {
		t.Fatalf("weir run exited %d; stderr:\n%s\n%s", res.code, tail(res.stderr, 3000), c.logs())
	}
	m := weakLineRE.FindStringSubmatch(res.stderr)
	if m == nil {
		t.Fatalf("no weak failover line in the client's output:\n%s", tail(res.stderr, 3000))
	}
	fig := make([]int64, 5)
	for i := range fig {
		fig[i], _ = strconv.ParseInt(m[i+1], 10, 64)
	}
	failures, restarts, lost, dupCount := fig[0], fig[1], fig[3], fig[4]
	missing, dup := demo.MissingDuplicated(events, committed(t, out))
	t.Logf("%s; measured %d missing, %d duplicated lines", m[0], missing, dup)
	if failures < kills || restarts < kills {
		t.Errorf("%d failures and %d task restarts counted for %d TaskManager kills", failures, restarts, kills)
	}
	switch {
	case stored && (missing != 0 || dup != 0 || lost != 0 || dupCount != 0):
		t.Errorf("measured %d missing and %d duplicated lines, counted %d lost and %d possibly duplicated; want 0 of each", missing, dup, lost, dupCount)
	case !stored && (missing != lost || dup != 0 || dupCount != 0):
		t.Errorf("measured %d missing and %d duplicated lines, counted %d lost and %d possibly duplicated; want the lost exactly missing and nothing duplicated", missing, dup, lost, dupCount)
	}
	if stored && !strings.Contains(res.stderr, "verify: committed output equals the failure-free output exactly") {
		t.Errorf("--verify did not find the output exact:\n%s", tail(res.stderr, 2000))
	}
	assertNoInProgress(t, out)
}

// TestClusterWeakKillJobManager SIGKILLs the JobManager of a
// WEAKLY_CONSISTENT job and starts it again on the same state folder: the
// new JobManager takes the job over and restores every task from its own
// newest snapshot (the same code as a local run started again), and the
// committed output equals the failure-free run's exactly.
func TestClusterWeakKillJobManager(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of three processes for seconds")
	}
	const events = 600_000
	c := startE2ECluster(t, 2, 2)
	args, out := c.demoArgs(events, 200_000, 2, "-D", "execution.checkpointing.mode=WEAKLY_CONSISTENT")
	client := startWeir(t, c.lifetime, args...)
	time.Sleep(1500 * time.Millisecond)
	c.jm.kill()
	t.Log("JobManager SIGKILLed")
	time.Sleep(300 * time.Millisecond)
	c.startJM()
	res := client.wait()
	if res.code != 0 {
		t.Fatalf("weir run exited %d; stderr:\n%s\n%s", res.code, tail(res.stderr, 3000), c.logs())
	}
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatalf("after a JobManager kill: %s\n%s", d, c.logs())
	}
	assertNoInProgress(t, out)
	jm := c.jm.stderr()
	if !strings.Contains(jm, "job recovered") || !strings.Contains(jm, "restoring each task from its own newest snapshot") {
		t.Errorf("the restarted JobManager did not restore the job's task snapshots:\n%s", c.logs())
	}
}
