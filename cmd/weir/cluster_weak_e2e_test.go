package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// weakLineRE parses the line a WEAKLY_CONSISTENT run ends with.
var weakLineRE = regexp.MustCompile(`weak failover: (\d+) failures, (\d+) task restarts, (\d+) replayed, (\d+) lost, (\d+) duplicated`)

// TestClusterWeakKillTaskManagers runs the demo in WEAKLY_CONSISTENT mode
// on a JobManager and three TaskManagers (two slots each, parallelism 4)
// and SIGKILLs a TaskManager three times. The in-flight logs and
// determinants a TaskManager held die with it: its tasks restart alone
// from their own snapshots on the free slots and rebuild their output logs
// from what those snapshots stored; their consumers elsewhere keep running
// and reconnect to the producers' new attempts (no other task may fail).
// With logs large enough nothing is lost, and the demo's restarted keyed
// tasks write straight into their sinks, so
// nothing can be re-emitted otherwise: the committed output must equal
// the failure-free run exactly (the client's --verify checks it against
// the JobManager's figures, the test again by event index).
func TestClusterWeakKillTaskManagers(t *testing.T) {
	t.Run("stored-logs", func(t *testing.T) { weakKillTaskManagers(t, true) })
	// Without stored logs (execution.checkpointing.weak.in-flight-log.
	// snapshot false) a lost TaskManager's logs are gone: a rebuilt log
	// takes its numbering from its consumer's position and counts what it
	// cannot replay as lost. Nothing is re-emitted otherwise in the demo,
	// so every missing line is counted lost; a second loss of a rebuilt
	// log before its consumer's next snapshot counts some records twice
	// (docs/weak-consistency.md, Limits), so lost may exceed missing.
	t.Run("no-stored-logs", func(t *testing.T) { weakKillTaskManagers(t, false) })
}

func weakKillTaskManagers(t *testing.T, stored bool) {
	const events, kills = 1_500_000, 3
	rng := killRand(t, 2)
	c := startE2ECluster(t, 3, 2)
	args, out := c.demoArgs(events, 150_000, 4, "-D", "execution.checkpointing.mode=WEAKLY_CONSISTENT",
		"-D", fmt.Sprintf("execution.checkpointing.weak.in-flight-log.snapshot=%t", stored))
	if stored {
		args = append(args, "--verify")
	}
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
	if dir := os.Getenv("WEIR_E2E_LOGS"); dir != "" {
		// Every process's whole stderr, to study a run that passed.
		for id, r := range map[string]*running{"jobmanager": c.jm, "client": client, "tm-0": c.tms["tm-0"], "tm-1": c.tms["tm-1"], "tm-2": c.tms["tm-2"]} {
			os.WriteFile(filepath.Join(dir, t.Name()[strings.LastIndex(t.Name(), "/")+1:]+"-"+id+".log"), []byte(r.stderr()), 0o644)
		}
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
	case !stored && (missing > lost || dup != 0 || dupCount != 0):
		t.Errorf("measured %d missing and %d duplicated lines, counted %d lost and %d possibly duplicated; want every missing line counted lost and nothing duplicated", missing, dup, lost, dupCount)
	case !stored && missing != lost:
		t.Logf("%d records counted lost twice", lost-missing)
	}
	// Only the lost TaskManagers' tasks restart: a consumer elsewhere
	// reconnects to its producers' new attempts, so no task reports a
	// failure of its own.
	if n := strings.Count(c.jm.stderr(), "task failed; it restarts alone"); n > 0 {
		t.Errorf("tasks that ran on surviving TaskManagers failed (%d reports, the first: %s)", n, firstLine(c.jm.stderr(), "task failed; it restarts alone"))
	}
	if stored && !strings.Contains(res.stderr, "verify: committed output equals the failure-free output exactly") {
		t.Errorf("--verify did not find the output exact:\n%s", tail(res.stderr, 2000))
	}
	assertNoInProgress(t, out)
}

// firstLine returns the first line of s that contains sub.
func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
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
