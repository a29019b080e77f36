package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/rest"
)

// The API over a real demo run, rate limited so that it runs while the
// test looks: two checkpoints triggered by POST complete (polled at the
// request id), the vertices and back pressure show the running subtasks,
// and after the run the checkpoint statistics are exact: the two
// on-demand checkpoints and the final one, all completed by all 4
// subtasks, matching the job's counters and the /metrics scrape.
func TestDemoJob(t *testing.T) {
	const n, k, p = 60_000, 53, 2
	dir := t.TempDir()
	cfg := weir.NewConfig()
	for key, v := range map[string]string{
		config.ParallelismDefault:    strconv.Itoa(p),
		config.CheckpointsDir:        filepath.Join(dir, "state"),
		config.CheckpointingInterval: "0", // every checkpoint but the final one is on demand
	} {
		if err := cfg.Set(key, v); err != nil {
			t.Fatal(err)
		}
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	out := filepath.Join(dir, "out")
	demo.Build(env, demo.Options{Events: n, Keys: k, Rate: 30_000, Out: out}) // 2 s: two on-demand checkpoints fit in
	j := &job{id: "demo", name: "demo", status: hooks.Plan(env).Status, control: hooks.Plan(env).Control, cfg: hooks.Config(env.Config())}
	reg := prometheus.NewRegistry()
	m, err := metrics.NewJob(reg, j.id, j.name, j.status, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unregister()
	srv := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(j), Metrics: metrics.Handler(reg, nil)}))
	defer srv.Close()
	url := srv.URL + "/jobs/demo"

	done := make(chan error, 1)
	go func() { done <- env.Execute(context.Background(), "demo") }()
	// The job is RUNNING once deployed, its subtasks a moment later (as in
	// Flink): wait for both, or the vertices may count no running subtask.
	waitFor(t, "the job and its subtasks to run", func() bool {
		if j.status.State() != jobstatus.StateRunning {
			return false
		}
		var d rest.JobDetails
		getJSON(t, url, &d)
		for _, v := range d.Vertices {
			if v.Subtasks != p {
				return false
			}
		}
		return len(d.Vertices) == 2
	})

	var details rest.JobDetails
	getJSON(t, url, &details)
	if jobstatus.JobState(details.State) != jobstatus.StateRunning || details.EndTime != -1 || details.Duration < 0 || len(details.Vertices) != 2 {
		t.Errorf("job details while running: %+v", details)
	}
	for i, v := range details.Vertices {
		if v.ID != strconv.Itoa(i) || v.Parallelism != p || v.Subtasks != p {
			t.Errorf("vertex %d: %+v, want id %d, parallelism and %d running subtasks", i, v, i, p)
		}
		if v.Metrics.ReadRecords > n || v.Metrics.WriteRecords > n {
			t.Errorf("vertex %d counts %+v exceed the %d events", i, v.Metrics, n)
		}
	}
	if v := details.Vertices; v[0].Name != "events" || v[0].Metrics.ReadRecords != 0 || v[1].Metrics.WriteRecords != 0 {
		t.Errorf("vertices %+v: want the source first, reading nothing; the sink chain writing nothing", v)
	}
	var bp rest.VertexBackPressure
	getJSON(t, url+"/vertices/1/backpressure", &bp)
	if bp.Status != "ok" || len(bp.Subtasks) != p || bp.Subtasks[0].Subtask != 0 || bp.Subtasks[1].Subtask != 1 {
		t.Errorf("back pressure while running: %+v", bp)
	}

	var plan rest.JobPlan
	getJSON(t, url+"/plan", &plan)
	if n := plan.Plan.Nodes; plan.Plan.JID != "demo" || len(n) != 2 || n[0].Description != "events" || n[1].ID != "1" || n[1].Parallelism != p {
		t.Errorf("plan while running: %+v", plan)
	}
	var vd rest.VertexDetails
	getJSON(t, url+"/vertices/1", &vd)
	if vd.ID != "1" || vd.Parallelism != p || len(vd.Subtasks) != p || vd.Subtasks[1].Subtask != 1 || vd.Subtasks[0].Status != "RUNNING" || !vd.Subtasks[0].Metrics.ReadRecordsComplete {
		t.Errorf("vertex details while running: %+v", vd)
	}

	var triggered []int64
	for range 2 {
		code, body := call(t, http.MethodPost, url+"/checkpoints")
		var tr rest.TriggerResponse
		if code != http.StatusAccepted || json.Unmarshal([]byte(body), &tr) != nil {
			t.Fatalf("POST checkpoints: %d %s", code, body)
		}
		waitFor(t, "checkpoint "+tr.RequestID+" to complete", func() bool {
			var st rest.TriggerStatus
			getJSON(t, url+"/checkpoints/"+tr.RequestID, &st)
			if st.Status.ID == "IN_PROGRESS" {
				return false
			}
			if want := fmt.Sprintf("{COMPLETED} &{%s }", tr.RequestID); fmt.Sprint(st.Status, " ", st.Operation) != want {
				t.Fatalf("trigger status %v %v, want %s", st.Status, st.Operation, want)
			}
			return true
		})
		id, _ := strconv.ParseInt(tr.RequestID, 10, 64)
		triggered = append(triggered, id)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if lines, err := file.ReadCommitted(out); err != nil || demo.Diff(demo.Expected(n, k), lines) != "" {
		t.Fatalf("committed output differs from the demo's (err %v)", err)
	}

	var stats rest.CheckpointingStatistics
	getJSON(t, url+"/checkpoints", &stats)
	if want := (rest.CheckpointCounts{Total: 3, Completed: 3}); stats.Counts != want {
		t.Errorf("counts %+v, want %+v", stats.Counts, want)
	}
	if c := j.status.CompletedCheckpoints.Load(); c != stats.Counts.Completed {
		t.Errorf("counts.completed %d, job counter %d", stats.Counts.Completed, c)
	}
	if len(stats.History) != 3 {
		t.Fatalf("history %+v, want 3 checkpoints", stats.History)
	}
	final := triggered[1] + 1
	for i, c := range stats.History {
		wantID, wantKind := []int64{final, triggered[1], triggered[0]}[i], []string{"final", "periodic", "periodic"}[i]
		if c.ID != wantID || c.Kind != wantKind || c.Status != jobstatus.CheckpointCompleted || c.CheckpointType != "CHECKPOINT" ||
			c.NumSubtasks != 2*p || c.NumAcknowledgedSubtasks != 2*p || c.StateSize <= 0 || c.EndToEndDuration < 0 ||
			c.LatestAckTimestamp != c.TriggerTimestamp+c.EndToEndDuration || c.FailureTimestamp != 0 || c.FailureMessage != "" {
			t.Errorf("history[%d] = %+v, want checkpoint %d (%s) completed by %d subtasks", i, c, wantID, wantKind, 2*p)
		}
		var d rest.CheckpointStatistics
		getJSON(t, fmt.Sprintf("%s/checkpoints/details/%d", url, c.ID), &d)
		if d != c {
			t.Errorf("details of %d: %+v, want the history entry %+v", c.ID, d, c)
		}
		checkSubtaskDetails(t, url, c, p)
	}
	if l := stats.Latest; l.Completed == nil || *l.Completed != stats.History[0] || l.Failed != nil || l.Restored != nil || l.Savepoint != nil {
		t.Errorf("latest %+v, want the final checkpoint completed and nothing else", l)
	}
	if c := stats.History[0]; j.status.LastCheckpointID.Load() != c.ID || j.status.LastCheckpointSize.Load() != c.CheckpointedSize || j.status.LastCheckpointFullSize.Load() != c.StateSize {
		t.Errorf("latest completed %+v, job counters id %d size %d full size %d", c, j.status.LastCheckpointID.Load(), j.status.LastCheckpointSize.Load(), j.status.LastCheckpointFullSize.Load())
	}
	// Heap checkpoints are full: each persists all the state it references.
	for i, c := range stats.History {
		if c.CheckpointedSize != c.StateSize {
			t.Errorf("history[%d]: checkpointed_size %d, state_size %d; want equal for a full checkpoint", i, c.CheckpointedSize, c.StateSize)
		}
	}
	sizes := []int64{stats.History[0].StateSize, stats.History[1].StateSize, stats.History[2].StateSize}
	if s := stats.Summary.StateSize; s.Min != min(sizes[0], sizes[1], sizes[2]) || s.Max != max(sizes[0], sizes[1], sizes[2]) || s.Avg != (sizes[0]+sizes[1]+sizes[2])/3 {
		t.Errorf("state size summary %+v of sizes %v", s, sizes)
	}

	getJSON(t, url, &details)
	// The duration is measured on the monotonic clock, the two times are
	// wall-clock milliseconds truncated each on its own: they agree within
	// 1 ms.
	if d := details.Duration - (details.EndTime - details.StartTime); jobstatus.JobState(details.State) != jobstatus.StateFinished || details.EndTime < details.StartTime || d < -1 || d > 1 {
		t.Errorf("job details after the run: %+v", details)
	}
	code, body := call(t, http.MethodPost, url+"/checkpoints")
	if want := `{"errors":["trigger a checkpoint of job \"demo\": job is not running (it is FINISHED)"]}` + "\n"; code != http.StatusConflict || body != want {
		t.Errorf("POST checkpoints after the run: %d %s, want 409 %s", code, body, want)
	}
	code, body = call(t, http.MethodGet, srv.URL+"/metrics")
	line := `weir_jobmanager_job_numberOfCompletedCheckpoints{job_id="demo",job_name="demo"} 3`
	if code != http.StatusOK || !strings.Contains(body, "\n"+line+"\n") {
		t.Errorf("GET /metrics: %d, no line %q in\n%s", code, line, body)
	}
}

// checkSubtaskDetails checks the per-vertex subtask statistics of
// checkpoint c of a job with two vertices of parallelism p: every subtask
// acknowledged once, and the vertices' in-flight figures add up to the
// checkpoint's. An aligned job persists no channel state.
func checkSubtaskDetails(t *testing.T, url string, c rest.CheckpointStatistics, p int) {
	t.Helper()
	var buffered, processed, persisted int64
	for v := range 2 {
		var ts rest.TaskCheckpointStatistics
		getJSON(t, fmt.Sprintf("%s/checkpoints/details/%d/subtasks/%d", url, c.ID, v), &ts)
		if ts.ID != c.ID || ts.Status != c.Status || ts.NumSubtasks != p || ts.NumAcknowledgedSubtasks != p || len(ts.Subtasks) != p {
			t.Errorf("checkpoint %d vertex %d: %+v, want %d acknowledged subtasks", c.ID, v, ts, p)
			continue
		}
		for i, s := range ts.Subtasks {
			if s.Index != i || s.Status != "completed" || s.AckTimestamp < c.TriggerTimestamp || s.UnalignedCheckpoint || s.Alignment.Persisted != 0 {
				t.Errorf("checkpoint %d vertex %d subtask %d: %+v", c.ID, v, i, s)
			}
		}
		buffered, processed, persisted = buffered+ts.AlignmentBuffered, processed+ts.ProcessedData, persisted+ts.PersistedData
	}
	if buffered != c.AlignmentBuffered || processed != c.ProcessedData || persisted != 0 || c.PersistedData != 0 {
		t.Errorf("checkpoint %d: vertices add up to buffered %d, processed %d, persisted %d; the checkpoint says %d, %d, %d (want persisted 0)",
			c.ID, buffered, processed, persisted, c.AlignmentBuffered, c.ProcessedData, c.PersistedData)
	}
	code, body := call(t, http.MethodGet, fmt.Sprintf("%s/checkpoints/details/%d/subtasks/7", url, c.ID))
	if code != http.StatusNotFound || !strings.Contains(body, "no vertex") {
		t.Errorf("subtasks of vertex 7: %d %s, want 404 naming the vertex", code, body)
	}
}
