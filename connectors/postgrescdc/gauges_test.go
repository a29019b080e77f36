package postgrescdc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
	jobmetrics "github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/testutil"
)

// TestGaugesOnJobManagerMetrics: without WithMetrics, the source's
// replication lag (bytes, seconds) and retained WAL reach the job's
// metrics, which the JobManager's /metrics serves (a local run's REST
// server registers the same collector; a cluster's gets the gauges from
// the TaskManagers' heartbeats, internal/cluster TestClusterOperatorGauges),
// labelled with the job, the task and the slot.
func TestGaugesOnJobManagerMetrics(t *testing.T) {
	src, name := newDB(t)
	dst, _ := newDB(t)
	db := connect(t, src)
	exec(t, db, "CREATE TABLE g (id serial PRIMARY KEY, v int)")
	exec(t, db, "INSERT INTO g (v) SELECT generate_series(1, 100)")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 1, t.TempDir(), "50ms", true, nil)))
	log, _ := testutil.Observe(env, nil)
	reg := prometheus.NewRegistry()
	m, err := jobmetrics.NewJob(reg, "cdcgauges", "cdcgauges", hooks.Plan(env).Status, jobmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unregister()
	slot := "s_" + name
	s := weir.FromSource(env, Source(src, []string{"g"}, WithSlot(slot), WithCreateSlot(), WithCreatePublication(),
		WithIdleTimeout(3*time.Second), WithStatusInterval(100*time.Millisecond))).Name("cdc").UID("cdc")
	weir.SinkToTransactional(s, Replica(dst)).Name("replica").UID("replica")
	want := map[string]bool{nameLagBytes: false, nameLagSeconds: false, nameRetainedBytes: false}
	done := make(chan error, 1)
	go func() { done <- env.Execute(ctx, "cdcgauges") }()
	// Scrape while the job streams what a writer changes for 1.5 s, and
	// until it ends idle.
	stopWrites := time.Now().Add(1500 * time.Millisecond)
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("job: %v\n%s", err, tail(log.String()))
			}
			running = false
		case <-time.After(20 * time.Millisecond):
			if time.Now().Before(stopWrites) {
				exec(t, db, "INSERT INTO g (v) VALUES (1)")
			}
		}
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if _, ok := want[f.GetName()]; !ok {
				continue
			}
			for _, mt := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range mt.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["slot"] != slot || labels["job_name"] != "cdcgauges" || labels["task_id"] != "0" || labels["subtask_index"] != "0" || !strings.Contains(labels["task_name"], "cdc") {
					t.Fatalf("%s: labels %v, want the job's, the source task's and the slot", f.GetName(), labels)
				}
				if f.GetName() != nameRetainedBytes || mt.GetGauge().GetValue() > 0 {
					want[f.GetName()] = true
				}
			}
		}
	}
	for n, seen := range want {
		if !seen {
			t.Errorf("the job's metrics never had %s (retained WAL above 0)", n)
		}
	}
}
