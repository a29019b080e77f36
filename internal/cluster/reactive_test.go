package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/cluster/pb"
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
