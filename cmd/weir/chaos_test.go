package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/testutil/pgtest"
)

// The chaos soak: etcd, three JobManagers under high availability, four
// TaskManagers and the demo at parallelism 4 into an exactly-once sink,
// while every 0.5–2 s a random process is SIGKILLed (and started again)
// or SIGSTOPped past its lease or heartbeat timeout (and SIGCONTed):
// JobManagers, the leader included, TaskManagers, etcd, and with
// -chaos-sink=postgres the database server (crash-stopped), with
// -chaos-sink=kafka the broker (SIGKILLed and restarted on its data). Afterwards the
// output must be exactly the failure-free output, the job must have ended
// by itself, nothing may be left prepared or in progress, and no
// checkpoint folder may lack its metadata. CI runs the short form; the
// long one is
//
//	go test ./cmd/weir -run TestChaosSoak -timeout 60m -args -chaos-faults=120 -chaos-baseline
//
// which prints the figures BENCHMARKS.md keeps.
var (
	chaosFaults   = flag.Int("chaos-faults", 20, "faults the chaos soak injects")
	chaosSink     = flag.String("chaos-sink", "file", "the chaos soak's exactly-once sink: file, postgres (a throwaway cluster of its own, crash-stopped too) or kafka (a throwaway broker of its own, SIGKILLed and restarted too; needs the jars .ci/kafka.sh installs)")
	chaosBaseline = flag.Bool("chaos-baseline", false, "run the chaos soak's job once without faults first, on the same cluster, for its throughput ratio")
)

// chaosRate paces the soak's events: slow enough that the job outlives
// the faults, fast enough that every checkpoint carries work.
const chaosRate = 20_000

// fault kinds of the soak.
const (
	faultKillJM   = "kill JobManager"
	faultPauseJM  = "pause JobManager"
	faultKillTM   = "kill TaskManager"
	faultPauseTM  = "pause TaskManager"
	faultEtcd     = "restart etcd"
	faultSinkDown = "crash-stop the sink's server" // PostgreSQL or the Kafka broker
)

// chaosFault is one injected fault: when, what, whom.
type chaosFault struct {
	at     time.Time
	kind   string
	target string
}

// chaosSinkEnv is the soak's sink: its --sink argument (empty: files in
// the demo's --out), how to read what it committed, and what it must not
// leave behind.
type chaosSinkEnv struct {
	arg   string
	read  func(t *testing.T) []string
	after func(t *testing.T)
	down  func(t *testing.T) // nil: the server is not faulted
}

func chaosSinkFor(t *testing.T, out string, run int) chaosSinkEnv {
	switch *chaosSink {
	case "file":
		return chaosSinkEnv{read: func(t *testing.T) []string { return committed(t, out) }, after: func(t *testing.T) { assertNoInProgress(t, out) }}
	case "postgres":
		pg := pgtest.NewCluster(t)
		table := fmt.Sprintf("weir_chaos_%d", run)
		return chaosSinkEnv{
			arg: pg.Conn + "&table=" + table,
			read: func(t *testing.T) []string {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				lines, err := readPostgresLines(ctx, endpoint{scheme: "postgres", conn: pg.Conn, table: table})
				if err != nil {
					t.Fatal(err)
				}
				return lines
			},
			after: func(t *testing.T) {
				if left := pg.Prepared(t); len(left) > 0 {
					t.Errorf("prepared transactions left on the server: %v", left)
				}
			},
			down: func(t *testing.T) {
				pg.Ctl(t, "stop", "-m", "immediate")
				time.Sleep(500 * time.Millisecond)
				pg.Ctl(t, "start")
			},
		}
	case "kafka":
		// A broker of the soak's own (not the shared one on 9092, which
		// other packages' tests use), so that it can be SIGKILLed and
		// restarted on its data like the other processes.
		b := kafkatest.Start(t)
		topic := uniqueTopic("weir-chaos")
		bs := b.Addrs()
		return chaosSinkEnv{
			arg:   "kafka://" + bs[0] + "/" + topic,
			read:  func(t *testing.T) []string { return readCommittedUpTo(t, bs, topic, true) },
			after: func(t *testing.T) { assertNoOpenTransactions(t, bs, topic) },
			down: func(t *testing.T) {
				b.Kill()
				time.Sleep(500 * time.Millisecond)
				if err := b.Restart(); err != nil {
					t.Fatalf("restart the soak's Kafka broker: %v\n%s", err, tail(b.Output(), 3000))
				}
			},
		}
	}
	t.Fatalf("-chaos-sink=%q: want file, postgres or kafka", *chaosSink)
	return chaosSinkEnv{}
}

func TestChaosSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("runs etcd and a cluster of seven processes under faults for a minute or more")
	}
	rng := killRand(t, 7)
	// Enough events for the faults at their mean spacing, pauses and
	// restarts included, with room to spare: the job must outlive them.
	events := chaosRate * (3*(*chaosFaults) + 20)
	// Every process may live through the baseline and the soak, each
	// several times the events' paced time at most.
	c := startHAClusterOn(t, nil, 5*time.Minute+6*time.Duration(events/chaosRate)*time.Second, 3, 4, 2, nil)
	var baseline time.Duration
	if *chaosBaseline {
		sink := chaosSinkFor(t, filepath.Join(c.dir, "out-baseline"), 0)
		start := time.Now()
		c.chaosRun(t, "demo-baseline", events, sink, filepath.Join(c.dir, "out-baseline"))
		baseline = time.Since(start)
		t.Logf("baseline: %d events in %s without faults", events, baseline.Round(time.Millisecond))
	}
	out := filepath.Join(c.dir, "out-chaos")
	sink := chaosSinkFor(t, out, 1)
	client := c.chaosSubmit(t, "demo-chaos", events, sink, out)
	start := time.Now()
	c.waitLeader(-1, 0)
	var faults []chaosFault
	kinds := []string{faultKillJM, faultKillJM, faultPauseJM, faultKillTM, faultKillTM, faultKillTM, faultPauseTM, faultEtcd}
	if sink.down != nil {
		kinds = append(kinds, faultSinkDown)
	}
	for len(faults) < *chaosFaults {
		delay := 500*time.Millisecond + time.Duration(rng.Int64N(int64(1500*time.Millisecond)))
		select {
		case <-client.done:
			t.Fatalf("the job ended after %d of %d faults: raise the events; client stderr:\n%s\n%s", len(faults), *chaosFaults, tail(client.stderr(), 3000), c.logs())
		case <-time.After(delay):
		}
		f := c.inject(t, rng, kinds[rng.IntN(len(kinds))], sink)
		faults = append(faults, f)
		t.Logf("fault %d at %s: %s %s", len(faults), f.at.Sub(start).Round(time.Millisecond), f.kind, f.target)
	}
	res := client.wait()
	took := time.Since(start)
	if res.code != 0 {
		t.Fatalf("weir run exited %d after %d faults; stderr:\n%s\n%s", res.code, len(faults), tail(res.stderr, 3000), c.logs())
	}
	if d := demo.Diff(demo.Expected(int64(events), demoKeys), sink.read(t)); d != "" {
		t.Fatalf("after %d faults the committed output differs from the failure-free run: %s\n%s", len(faults), d, c.logs())
	}
	sink.after(t)
	c.assertNoOrphanCheckpoints(t)
	c.chaosFigures(t, faults, events, start, took, baseline)
}

// chaosSubmit submits the demo as job name and follows it.
func (c *haCluster) chaosSubmit(t *testing.T, name string, events int, sink chaosSinkEnv, out string) *running {
	args, _ := c.demoArgs(events, chaosRate, 4)
	if i := slices.Index(args, "--out"); i >= 0 {
		args = slices.Delete(args, i, i+2)
	}
	args = append(args, "--job-name", name, "-v")
	if sink.arg != "" {
		args = append(args, "--sink", sink.arg)
	} else {
		args = append(args, "--out", out)
	}
	return startWeir(t, c.lifetime, args...)
}

// chaosRun runs the demo as job name without faults and checks its output.
func (c *haCluster) chaosRun(t *testing.T, name string, events int, sink chaosSinkEnv, out string) {
	res := c.chaosSubmit(t, name, events, sink, out).wait()
	if res.code != 0 {
		t.Fatalf("baseline run exited %d; stderr:\n%s", res.code, tail(res.stderr, 3000))
	}
	if d := demo.Diff(demo.Expected(int64(events), demoKeys), sink.read(t)); d != "" {
		t.Fatalf("baseline output: %s", d)
	}
}

// inject applies one fault of kind and returns it once the process is
// back (killed ones restarted, paused ones continued).
func (c *haCluster) inject(t *testing.T, rng *rand.Rand, kind string, sink chaosSinkEnv) chaosFault {
	f := chaosFault{at: time.Now(), kind: kind}
	lease, _ := time.ParseDuration(haLease)
	switch kind {
	case faultKillJM, faultPauseJM:
		i := rng.IntN(len(c.jms))
		if li, _ := c.leader(); li >= 0 && rng.IntN(2) == 0 {
			i = li // the leader half the time: the fault that matters most
		}
		jm := c.jms[i]
		f.target = jm.id
		if kind == faultKillJM {
			jm.proc.kill()
			c.startJM(i)
			break
		}
		c.pause(t, jm.proc, lease+time.Second)
	case faultKillTM, faultPauseTM:
		ids := make([]string, 0, len(c.tms))
		for id := range c.tms {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		id := ids[rng.IntN(len(ids))]
		f.target = id
		if kind == faultKillTM {
			c.tms[id].kill()
			c.startTM(id)
			break
		}
		// Past heartbeat.timeout (5 s): the JobManager declares it lost
		// and restarts its tasks elsewhere; continued, it must not commit
		// anything of its stale attempts.
		c.pause(t, c.tms[id], 5500*time.Millisecond)
	case faultEtcd:
		f.target = "etcd"
		c.etcd.Stop()
		time.Sleep(time.Duration(rng.Int64N(int64(lease))))
		c.etcd.Restart(t)
	case faultSinkDown:
		f.target = *chaosSink
		sink.down(t)
	}
	return f
}

// pause SIGSTOPs r for d, then SIGCONTs it.
func (c *haCluster) pause(t *testing.T, r *running, d time.Duration) {
	pid := r.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Logf("SIGSTOP %d: %v (it ended)", pid, err)
		return
	}
	time.Sleep(d)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Logf("SIGCONT %d: %v", pid, err)
	}
}

// assertNoOrphanCheckpoints fails on a checkpoint folder without its
// metadata under the cluster's checkpoint storage, once the jobs ended.
func (c *haCluster) assertNoOrphanCheckpoints(t *testing.T) { assertNoOrphanCheckpoints(t, c.dir) }

// chaosFigures logs what the soak did: faults by kind, checkpoints
// completed, recoveries, the time from each fault to the next completed
// checkpoint, and the throughput against the baseline.
func (c *haCluster) chaosFigures(t *testing.T, faults []chaosFault, events int, start time.Time, took, baseline time.Duration) {
	var completions []time.Time
	recovered := 0
	for _, jm := range c.jms {
		log := jm.log()
		recovered += strings.Count(log, `msg="job recovered"`) // the baseline never recovers
		for _, l := range strings.Split(log, "\n") {
			if at, ok := logTime(l); ok && at.After(start) && strings.Contains(l, `msg="checkpoint completed"`) {
				completions = append(completions, at)
			}
		}
	}
	slices.SortFunc(completions, func(a, b time.Time) int { return a.Compare(b) })
	byKind := map[string]int{}
	var gaps []time.Duration
	for _, f := range faults {
		byKind[f.kind]++
		if i, _ := slices.BinarySearchFunc(completions, f.at, func(a, b time.Time) int { return a.Compare(b) }); i < len(completions) {
			gaps = append(gaps, completions[i].Sub(f.at))
		}
	}
	slices.Sort(gaps)
	q := func(p float64) time.Duration {
		if len(gaps) == 0 {
			return 0
		}
		return gaps[min(len(gaps)-1, int(p*float64(len(gaps))))].Round(time.Millisecond)
	}
	kinds := make([]string, 0, len(byKind))
	for k, n := range byKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(kinds)
	t.Logf("chaos: %d faults (%s); sink %s; %d events exact, 0 lost, 0 duplicated; %d checkpoints completed; job recovered %d times",
		len(faults), strings.Join(kinds, ", "), *chaosSink, events, len(completions), recovered)
	t.Logf("chaos: fault to next completed checkpoint p50 %s, p99 %s, max %s (%d of %d faults followed by one)", q(0.5), q(0.99), q(1), len(gaps), len(faults))
	if baseline > 0 {
		t.Logf("chaos: %s with faults, %s without: throughput %.2f of the failure-free run", took.Round(time.Millisecond), baseline.Round(time.Millisecond), baseline.Seconds()/took.Seconds())
	}
}
