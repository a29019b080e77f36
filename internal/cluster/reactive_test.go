package cluster

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/jobstatus"
)

// TestReactiveSubmitChecks: a JobManager in reactive mode refuses what it
// cannot run, naming the fix: a WEAKLY_CONSISTENT job, a job with the
// autoscaler on, a second job while one runs. The job it runs records
// reactive mode's steps in its status.
func TestReactiveSubmitChecks(t *testing.T) {
	dir := t.TempDir()
	b := startBareJobManager(t, dir)
	b.m.cfg.Reactive = &ReactiveConfig{Stabilization: 10 * time.Millisecond, WaitTimeout: time.Second, MinIncrease: 1, RetryDelay: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	submit := func(name string, conf map[string]string) error {
		s := demoSpec(dir, name)
		for k, v := range conf {
			s.Config[k] = v
		}
		_, err := b.m.Submit(ctx, &pb.SubmitRequest{Spec: s})
		return err
	}
	for _, c := range []struct {
		conf map[string]string
		want string
	}{
		{map[string]string{"execution.checkpointing.mode": "WEAKLY_CONSISTENT"}, "submit it with EXACTLY_ONCE or AT_LEAST_ONCE"},
		{map[string]string{"job.autoscaler.enabled": "true"}, "leave the autoscaler off"},
		{map[string]string{"scheduler-mode": "reactive"}, "scheduler-mode is the JobManager's, not a job's"},
	} {
		if err := submit("refused", c.conf); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error saying %q", c.conf, err, c.want)
		}
	}
	if err := submit("first", nil); err != nil {
		t.Fatal(err)
	}
	if err := submit("second", nil); err == nil || !strings.Contains(err.Error(), "job first runs: cancel it first") {
		t.Fatalf("second job: %v", err)
	}
	// No TaskManager: the job waits for slots and is not scaled to 0.
	j := b.m.job("first")
	deadline := time.Now().Add(10 * time.Second)
	for {
		on, ds := j.status.Reactive()
		var kinds []string
		for _, d := range ds {
			kinds = append(kinds, d.Kind+": "+d.Why)
		}
		got := strings.Join(kinds, "\n")
		if on && strings.Contains(got, "running: a run of the job started at parallelism 1") && strings.Contains(got, "wait: no slots: waiting for a TaskManager") {
			if strings.Contains(got, "scale-") {
				t.Fatalf("rescaled without slots:\n%s", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reactive steps of the job: on %v\n%s", on, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := b.m.Cancel(ctx, &pb.CancelRequest{Job: "first"}); err != nil {
		t.Fatal(err)
	}
}

// TestReactiveInProcess is TestClusterReactive (cmd/weir) in one process,
// under the race detector: a JobManager in reactive mode with one
// TaskManager of one slot; a second TaskManager of two slots registers
// and the job scales up in place to 3; it is killed and, after the wait
// timeout, the job runs again at 1 and finishes with the failure-free
// output.
func TestReactiveInProcess(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{Reactive: &ReactiveConfig{Stabilization: 300 * time.Millisecond, WaitTimeout: time.Second, MinIncrease: 1, RetryDelay: time.Second}})
	c.startTM("tm-a", 1)
	const n, k = 300_000, 13
	out := c.submitDemo("demo", n, k, 40_000, baseConf(1))
	from := 0
	waitRunning := func(p int) {
		t.Helper()
		want := regexp.MustCompile(fmt.Sprintf(`msg="reactive: job running"[^\n]* job=demo parallelism=%d `, p))
		deadline := time.Now().Add(30 * time.Second)
		for {
			log := c.log.String()
			if loc := want.FindStringIndex(log[from:]); loc != nil {
				from += loc[1]
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no run at parallelism %d:\n%s", p, reactiveLines(log))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitRunning(1)
	c.startTM("tm-b", 2)
	waitRunning(3)
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	c.killTM("tm-b")
	waitRunning(1)
	if d := time.Since(killed); d < time.Second {
		t.Fatalf("scaled down %s after the loss, before the 1 s wait", d)
	}
	u := c.wait("demo", time.Minute)
	if jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s\n%s", u.GetState(), u.GetFailure(), reactiveLines(c.log.String()))
	}
	checkDemoOutput(t, out, n, k)
	t.Log(reactiveLines(c.log.String()))
}

// reactiveLines returns the JobManager's reactive-mode log lines.
func reactiveLines(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "reactive") || strings.Contains(l, "job ended") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestReactiveLossWithinWait: a TaskManager lost and back within the wait
// timeout changes nothing: the job's failed region gets the slots again
// and it runs on at its parallelism, with no reactive rescale.
func TestReactiveLossWithinWait(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{Reactive: &ReactiveConfig{Stabilization: 200 * time.Millisecond, WaitTimeout: 10 * time.Second, MinIncrease: 1, RetryDelay: time.Second}})
	c.startTM("tm-a", 1)
	c.startTM("tm-b", 1)
	const n, k = 200_000, 13
	out := c.submitDemo("demo", n, k, 40_000, baseConf(1))
	running := regexp.MustCompile(`msg="reactive: job running"[^\n]* parallelism=(\d+) `)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(c.log.String(), `msg="reactive: job running" role=jobmanager job=demo parallelism=2 `) {
		if time.Now().After(deadline) {
			t.Fatalf("no run at 2:\n%s", reactiveLines(c.log.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	c.killTM("tm-b")
	c.startTM("tm-b", 1)
	u := c.wait("demo", time.Minute)
	log := c.log.String()
	if jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s\n%s", u.GetState(), u.GetFailure(), reactiveLines(log))
	}
	checkDemoOutput(t, out, n, k)
	if runs := running.FindAllStringSubmatch(log, -1); len(runs) != 2 || strings.Contains(log, "reactive: scale-down") {
		t.Fatalf("%d runs, want 2 (1, then 2): the loss within the wait must not rescale\n%s", len(runs), reactiveLines(log))
	}
	if !strings.Contains(log, "TaskManager lost; restarting its regions") {
		t.Fatalf("the job never saw tm-b's loss:\n%s", reactiveLines(log))
	}
}
