package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/rest"
)

// freePort returns a loopback address with a port that was free a moment
// ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A rate-limited demo run serves the REST API: the checkpoint statistics
// show completed checkpoints while it runs, a POSTed checkpoint shows up
// completed, /metrics has the job's metrics, and the run ends normally.
func TestRESTWhileRunning(t *testing.T) {
	addr := freePort(t)
	dir := t.TempDir()
	r := startWeir(t, 60*time.Second, "run", "demo", "--events", "150000", "--rate", "50000", "-p", "2",
		"--checkpoint-interval", "100ms", "--state-dir", filepath.Join(dir, "state"), "-q", "--rest-address", addr)
	want := "REST API listening on " + addr
	for l := range r.lines {
		if l == want {
			break
		}
	}
	base := "http://" + addr + "/jobs/demo"
	get := func(url string, v any) int {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v; stderr:\n%s", url, err, r.stderr())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if v != nil {
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatalf("GET %s: %s: %v", url, b, err)
			}
		}
		return resp.StatusCode
	}
	// Poll gently: the job runs for about 3 s.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var stats rest.CheckpointingStatistics
	for ; stats.Counts.Completed < 2; <-tick.C {
		if code := get(base+"/checkpoints", &stats); code != http.StatusOK {
			t.Fatalf("GET checkpoints: %d", code)
		}
	}
	if c := stats.Counts; c.Total != c.Completed+c.Failed+c.InProgress || stats.Latest.Completed == nil || len(stats.History) == 0 {
		t.Errorf("checkpoint statistics while running: %+v", stats)
	}
	resp, err := http.Post(base+"/checkpoints", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var tr rest.TriggerResponse
	json.NewDecoder(resp.Body).Decode(&tr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || tr.RequestID == "" {
		t.Fatalf("POST checkpoints: %d %+v", resp.StatusCode, tr)
	}
	for ; ; <-tick.C {
		var st rest.TriggerStatus
		if code := get(base+"/checkpoints/"+tr.RequestID, &st); code != http.StatusOK {
			t.Fatalf("GET trigger status %s: %d", tr.RequestID, code)
		}
		if st.Status.ID == "COMPLETED" {
			if st.Operation == nil || fmt.Sprint(st.Operation.CheckpointID) != tr.RequestID || st.Operation.FailureCause != "" {
				t.Errorf("trigger status %+v", st.Operation)
			}
			break
		}
	}
	resp, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantContains(t, string(b),
		`weir_jobmanager_job_numberOfCompletedCheckpoints{job_id="demo",job_name="demo"} `,
		`weir_taskmanager_job_task_numRecordsOut{job_id="demo",job_name="demo",subtask_index="1",task_id="0",task_name="events"} `,
		"go_goroutines ")
	res := r.wait()
	wantExit(t, res, 0)
	wantContains(t, res.stderr, "committed 150000 lines")
}

// A port in use or an address other hosts can reach is a usage error
// before the job starts.
func TestRESTAddressRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	for _, tc := range []struct {
		addr string
		msg  string
	}{
		{busy, "weir: --rest-address: rest api address " + busy + ": address is already in use (another weir or a Flink JobManager?); stop that process or choose another port"},
		{"0.0.0.0:8081", "weir: --rest-address: rest api address 0.0.0.0:8081: address is reachable from other hosts and the API has no authentication; listen on 127.0.0.1 or allow remote access explicitly (--rest-allow-remote)"},
		{"8081", `weir: --rest-address: rest api address "8081": address 8081: missing port in address; want HOST:PORT, e.g. 127.0.0.1:8081`},
	} {
		dir := t.TempDir()
		res := runWeir(t, 30*time.Second, "run", "demo", "--events", "1000", "--state-dir", filepath.Join(dir, "state"), "-q", "--rest-address", tc.addr)
		wantExit(t, res, 2)
		wantLine(t, res.stderr, tc.msg)
		if strings.Contains(res.stderr, "source records") {
			t.Errorf("--rest-address %s: the job ran:\n%s", tc.addr, res.stderr)
		}
	}
}
