package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestCDCMetricsOnJobManager: `weir run cdc` submitted to a cluster (a
// JobManager and a TaskManager as processes) exports the source's
// replication lag and retained WAL on the JobManager's /metrics, with the
// job's, the task's and the slot's labels, carried by the TaskManager's
// heartbeats: the series deploy/prometheus/weir-cdc-alerts.yml alerts on.
func TestCDCMetricsOnJobManager(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of two processes and PostgreSQL")
	}
	id, src, dst, db := cdcSetup(t, "cdcmetrics", "CREATE TABLE items (id int PRIMARY KEY, v text)", "INSERT INTO items SELECT i, 'v' || i FROM generate_series(1, 500) i")
	slot := "cdcmetrics_" + id
	t.Cleanup(func() {
		db.Exec(t.Context(), "SELECT pg_drop_replication_slot($1) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", slot)
	})
	c := startE2ECluster(t, 1, 2, "heartbeat.interval=500ms")
	c.waitTaskManagers(1)
	r := startWeir(t, 2*time.Minute, "run", "cdc", "--jobmanager", c.rpc, "--source", src, "--tables", "items", "--sink", dst,
		"--slot", slot, "--idle-timeout", "6s", "--checkpoint-interval", "200ms", "-v")
	want := []string{"weir_postgrescdc_retained_wal_bytes{", "weir_postgrescdc_replication_lag_bytes{", "weir_postgrescdc_replication_lag_seconds{"}
	labels := fmt.Sprintf(`slot=%q`, slot)
	var body string
	found := func() bool {
		for _, w := range want {
			ok := false
			for _, l := range strings.Split(body, "\n") {
				if strings.HasPrefix(l, w) && strings.Contains(l, labels) && strings.Contains(l, `job_name="cdc"`) && strings.Contains(l, `task_id="0"`) {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; !found(); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the JobManager's /metrics lacks the CDC gauges %q with %s:\n%s", want, labels, body)
		}
		time.Sleep(200 * time.Millisecond)
		if _, err := db.Exec(t.Context(), "INSERT INTO items VALUES ($1, 'new') ON CONFLICT DO NOTHING", 1000+i); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + c.rest + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "weir_postgrescdc_") {
			t.Log(l)
		}
	}
	wantExit(t, r.wait(), 0)
}

// TestCDCParallelSnapshotCluster: weir run cdc --parallelism 2 on a
// JobManager and two TaskManagers of one slot each, so that the
// snapshot's readers run in two processes and the planner's assignments
// and log changes, and the readers' rows, cross TaskManagers encoded
// (Change.MarshalBinary); a writer runs meanwhile; the replica equals
// the source row for row (verifyReplica, what --verify runs).
func TestCDCParallelSnapshotCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of three processes and PostgreSQL")
	}
	id, src, dst, db := cdcSetup(t, "cdcparc",
		"CREATE TABLE accounts (id bigint PRIMARY KEY, balance int, note text)",
		"INSERT INTO accounts SELECT i, i % 1000, 'n' || i FROM generate_series(1, 20000) i",
		"CREATE TABLE notes (tag text PRIMARY KEY, n int)",
		"INSERT INTO notes SELECT 'tag' || i, 0 FROM generate_series(1, 300) i")
	slot := "cdcparc_" + id
	t.Cleanup(func() {
		db.Exec(t.Context(), "SELECT pg_drop_replication_slot($1) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", slot)
	})
	c := startE2ECluster(t, 2, 1)
	c.waitTaskManagers(2)
	wctx, stopWriter := context.WithCancel(t.Context())
	done := make(chan int)
	go func() {
		n, err := cdcWriter(wctx, src, 17)
		if err != nil {
			t.Error(err)
		}
		done <- n
	}()
	r := startWeir(t, 2*time.Minute, "run", "cdc", "--jobmanager", c.rpc, "--source", src, "--tables", "accounts,notes", "--sink", dst,
		"--slot", slot, "--parallelism", "2", "--chunk-rows", "500", "--idle-timeout", "4s", "--checkpoint-interval", "200ms", "-v")
	time.Sleep(3 * time.Second)
	stopWriter()
	t.Logf("the writer committed %d transactions", <-done)
	res := r.wait()
	wantExit(t, res, 0)
	// A submitted run's client does not verify; compare here, as --verify does.
	rows, diffs, err := verifyReplica(t.Context(), src, dst, []string{"accounts", "notes"})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	if !strings.Contains(res.stderr, "FINISHED") || rows == 0 {
		t.Errorf("the job did not finish with rows to compare (%d rows):\n%s", rows, tail(res.stderr, 3000))
	}
	t.Logf("replica equals source: %d rows in 2 tables", rows)
}
