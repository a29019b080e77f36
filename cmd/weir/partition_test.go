package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// Real network partitions (a paused process stops both talking and
// acting; a partitioned one goes on acting): etcd, two JobManagers and
// three TaskManagers, each on a test host of its own (testnet_test.go),
// run the demo at parallelism 4 while links between them are cut, then
// healed. After each the committed output must equal the failure-free
// output exactly; the time from the cut to its detection and to the next
// completed checkpoint is logged. It needs root (CI runs as root) and
// skips with the reason elsewhere.
func TestPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test hosts and runs a cluster of six processes per partition")
	}
	for _, sc := range []struct {
		name string
		// cut partitions the cluster and returns what it did and the log
		// line (regexp, in the JobManagers' logs) that shows it detected.
		cut func(c *haCluster, leader int) (what string, detected string)
		// hold is how long the cut lasts after its detection.
		hold time.Duration
	}{
		{"taskmanager-from-jobmanagers", func(c *haCluster, _ int) (string, string) {
			for _, jm := range c.jms {
				c.net.cut(c.tmHosts["tm-0"], jm.host)
			}
			return "tm-0 cut from every JobManager", `msg="TaskManager lost" .*tm=tm-0 `
		}, 2 * time.Second},
		{"taskmanager-from-taskmanager", func(c *haCluster, _ int) (string, string) {
			c.net.cut(c.tmHosts["tm-0"], c.tmHosts["tm-1"])
			return "tm-0 and tm-1 cut from each other (both reach the JobManagers)", `msg="task failed`
		}, 2 * time.Second},
		{"leader-from-etcd", func(c *haCluster, leader int) (string, string) {
			c.net.drop(c.jms[leader].host, c.net.rootIP)
			return c.jms[leader].id + " (leader) cut from etcd, still reaching the TaskManagers", `JobManager lost the leadership`
		}, 3 * time.Second},
		{"asymmetric", func(c *haCluster, _ int) (string, string) {
			// tm-0 reaches no JobManager; the leader's packets still reach
			// tm-0, but nothing comes back.
			for _, jm := range c.jms {
				c.net.drop(c.tmHosts["tm-0"], jm.host.ip)
			}
			return "tm-0 drops what it sends to the JobManagers (they still reach it)", `msg="TaskManager lost" .*tm=tm-0 `
		}, 2 * time.Second},
	} {
		t.Run(sc.name, func(t *testing.T) {
			tn := newTestNet(t)
			c := startHAClusterOn(t, tn, 5*time.Minute, 2, 3, 2, nil)
			const events = 1_600_000
			client, out := c.startDemo(events)
			c.waitLeader(-1, 0)
			if !c.waitCheckpoint(time.Now(), 30*time.Second) {
				t.Fatalf("no checkpoint completed before the cut\n%s", c.logs())
			}
			// Who leads now: on a loaded machine a lease can expire
			// before any cut (haLease), and the cut must hit the
			// leader of the running job.
			leader, term := c.waitLeader(-1, 0)
			cutAt := time.Now()
			what, detectedRE := sc.cut(c, leader)
			t.Logf("%s at %s", what, cutAt.Format(time.RFC3339Nano))
			detected, ok := c.waitLog(regexp.MustCompile(detectedRE), cutAt, 45*time.Second)
			if !ok {
				t.Fatalf("%s: not detected within 45 s (no %q in the JobManagers' logs)\n%s", what, detectedRE, c.logs())
			}
			if sc.name == "leader-from-etcd" {
				next, nterm := c.waitLeader(leader, term)
				t.Logf("%s leads in term %d", c.jms[next].id, nterm)
			}
			time.Sleep(sc.hold)
			healAt := time.Now()
			tn.heal()
			select {
			case <-client.done:
				// Recovered and finished while the cut held (a slow
				// machine takes longer to reach the cut): the output is
				// checked all the same, the heal had nothing to resume.
				t.Logf("the job ended before the heal")
			default:
			}
			c.finish(client, out, events, what+", then healed")
			recovered := c.firstCompletionAfter(detected)
			t.Logf("%s: detected after %s, next checkpoint completed %s after the cut; healed after %s",
				sc.name, detected.Sub(cutAt).Round(time.Millisecond), recovered.Sub(cutAt).Round(time.Millisecond), healAt.Sub(cutAt).Round(time.Millisecond))
			if sc.name == "leader-from-etcd" {
				// No split brain: the deposed leader completes no
				// checkpoint once it lost the leadership.
				old := c.jms[leader].log()
				for _, l := range strings.Split(old, "\n") {
					if at, ok := logTime(l); ok && at.After(detected) && strings.Contains(l, `msg="checkpoint completed"`) {
						t.Errorf("the deposed leader completed a checkpoint after it lost the leadership: %s", l)
					}
				}
			}
		})
	}
}

var anyLogTimeRE = regexp.MustCompile(`^time=(\S+) `)

// logTime is the time of a log line of a weir process, if it has one.
func logTime(line string) (time.Time, bool) {
	m := anyLogTimeRE.FindStringSubmatch(line)
	if m == nil {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, m[1])
	return at, err == nil
}

// waitLog waits until a JobManager's log has a line matching re stamped
// after since, and returns its time.
func (c *haCluster) waitLog(re *regexp.Regexp, since time.Time, within time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, jm := range c.jms {
			for _, l := range strings.Split(jm.log(), "\n") {
				if at, ok := logTime(l); ok && at.After(since) && re.MatchString(l) {
					return at, true
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Time{}, false
}

// waitCheckpoint waits until a checkpoint completes after since.
func (c *haCluster) waitCheckpoint(since time.Time, within time.Duration) bool {
	_, ok := c.waitLog(regexp.MustCompile(`msg="checkpoint completed"`), since, within)
	return ok
}

// firstCompletionAfter is the time of the first checkpoint completed after
// since, in any JobManager's log; zero if none.
func (c *haCluster) firstCompletionAfter(since time.Time) time.Time {
	var first time.Time
	for _, jm := range c.jms {
		for _, l := range strings.Split(jm.log(), "\n") {
			if at, ok := logTime(l); ok && at.After(since) && strings.Contains(l, `msg="checkpoint completed"`) && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
	}
	return first
}
