package rest_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/rest"
)

// Routing and errors, with a job that has not started: exact bodies.
func TestRoutes(t *testing.T) {
	cfg := config.New()
	for k, v := range map[string]string{
		config.CheckpointingInterval:          "3s",
		config.CheckpointingMode:              "at-least-once",
		config.CheckpointingMinPause:          "250ms",
		config.CheckpointingTimeout:           "1min",
		config.CheckpointingMaxConcurrent:     "2",
		config.CheckpointingTolerableFailures: "4",
		config.CheckpointsNumRetained:         "5",
		config.CheckpointsDir:                 "/data/chk",
		config.S3SecretKey:                    "hunter2",
	} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	j := &job{id: "j1", name: "wordcount", status: &jobstatus.JobStatus{}, cfg: cfg}
	now := time.UnixMilli(1_700_000_000_000).UTC()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("weir_x 1\n")) })
	srv := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(j), Metrics: metrics, Now: func() time.Time { return now }, Version: "v0.test"}))
	defer srv.Close()

	for _, tc := range []struct {
		method, path string
		code         int
		body         string
		allow        string
	}{
		{"GET", "/overview", 200, `{"jobs-running":1,"jobs-finished":0,"jobs-cancelled":0,"jobs-failed":0,"weir-version":"v0.test","taskmanagers":0,"slots-total":0,"slots-available":0}`, ""},
		{"GET", "/taskmanagers", 200, `{"taskmanagers":[]}`, ""},
		{"GET", "/jobs", 200, `{"jobs":[{"id":"j1","status":"CREATED"}]}`, ""},
		{"GET", "/jobs/overview", 200, `{"jobs":[{"jid":"j1","name":"wordcount","state":"CREATED","start-time":-1,"end-time":-1,"duration":-1,"last-modification":-1}]}`, ""},
		{"GET", "/jobs/j1", 200, `{"jid":"j1","name":"wordcount","state":"CREATED","start-time":-1,"end-time":-1,"duration":-1,"now":1700000000000,"restarts":0,"vertices":[]}`, ""},
		{"GET", "/jobs/j1/checkpoints", 200, `{"counts":{"restored":0,"total":0,"in_progress":0,"completed":0,"failed":0},"summary":{"checkpointed_size":{"min":0,"max":0,"avg":0},"state_size":{"min":0,"max":0,"avg":0},"end_to_end_duration":{"min":0,"max":0,"avg":0},"alignment_buffered":{"min":0,"max":0,"avg":0},"processed_data":{"min":0,"max":0,"avg":0},"persisted_data":{"min":0,"max":0,"avg":0}},"latest":{"completed":null,"savepoint":null,"failed":null,"restored":null},"history":[]}`, ""},
		{"GET", "/jobs/j1/checkpoints/config", 200, `{"mode":"at_least_once","interval":3000,"timeout":60000,"min_pause":250,"max_concurrent":2,"tolerable_failed_checkpoints":4,"unaligned_checkpoints":false,"aligned_checkpoint_timeout":0,"num_retained":5,"checkpoint_storage":"/data/chk"}`, ""},
		{"GET", "/metrics", 200, "weir_x 1", ""},
		{"GET", "/healthz", 200, `{"status":"ok"}`, ""},
		{"GET", "/readyz", 200, `{"status":"ready"}`, ""},
		{"GET", "/config", 200, `{"refresh-interval":3000,"timezone-name":"UTC","timezone-offset":0,"weir-version":"v0.test","features":{"web-submit":false,"web-cancel":true,"web-rescale":false,"web-history":false}}`, ""},
		{"GET", "/jobmanager/config", 200, `[]`, ""},
		{"GET", "/jobmanager/metrics?get=numRunningJobs,taskSlotsTotal,nope", 200, `[{"id":"numRunningJobs","value":"0"},{"id":"taskSlotsTotal","value":"0"}]`, ""},
		{"GET", "/jobmanager/metrics", 200, `[{"id":"Status.Go.Goroutines"},{"id":"Status.Go.Memory.Heap.Committed"},{"id":"Status.Go.Memory.Heap.Used"},{"id":"numRegisteredTaskManagers"},{"id":"numRunningJobs"},{"id":"taskSlotsAvailable"},{"id":"taskSlotsTotal"}]`, ""},
		{"GET", "/taskmanagers/tm-1", 404, `{"errors":["taskmanager \"tm-1\" not found; known taskmanagers: none (GET /taskmanagers lists them)"]}`, ""},
		{"GET", "/jobs/j1/plan", 200, `{"plan":{"jid":"j1","name":"wordcount","type":"STREAMING","nodes":[]}}`, ""},
		{"GET", "/jobs/j1/exceptions", 200, `{"root-exception":null,"timestamp":null,"all-exceptions":[],"truncated":false,"exceptionHistory":{"entries":[],"truncated":false}}`, ""},
		{"GET", "/jobs/j1/config", 200, `{"jid":"j1","name":"wordcount","execution-config":{"execution-mode":"PIPELINED","restart-strategy":"exponential-delay","job-parallelism":1,"object-reuse-mode":false,"user-config":{"execution.checkpointing.interval":"3 s","execution.checkpointing.max-concurrent-checkpoints":"2","execution.checkpointing.min-pause":"250 ms","execution.checkpointing.mode":"AT_LEAST_ONCE","execution.checkpointing.timeout":"1 min","execution.checkpointing.tolerable-failed-checkpoints":"4","s3.secret-key":"******","state.checkpoints.dir":"/data/chk","state.checkpoints.num-retained":"5"}}}`, ""},
		{"GET", "/jobs/j1/vertices/0", 404, `{"errors":["vertex \"0\" of job \"j1\" not found; its vertices are none (GET /jobs/j1 lists them)"]}`, ""},
		{"POST", "/jobs/j1/savepoints", 400, `{"errors":["savepoint of job \"j1\": no target directory given and state.savepoints.dir is not set: send one or set state.savepoints.dir"]}`, ""},
		{"GET", "/jobs/j1/savepoints/0123456789abcdef0123456789abcdef", 404, `{"errors":["no savepoint operation 0123456789abcdef0123456789abcdef of job \"j1\" (the API remembers the last 256, until it restarts); POST /jobs/j1/savepoints starts one"]}`, ""},
		{"GET", "/jobs/j1/stop/x", 404, `{"errors":["trigger id \"x\" is not one: want the 32 hex digits of the request-id that POST /jobs/j1/stop answered"]}`, ""},
		{"POST", "/jobs/j1/stop", 409, `{"errors":["stop of job \"j1\": job is not running (it is CREATED)"]}`, ""},
		{"POST", "/jobs/j1/checkpoints", 503, `{"errors":["trigger a checkpoint of job \"j1\": job is not running (it is CREATED)"]}`, ""},
		{"GET", "/jobs/nope", 404, `{"errors":["job \"nope\" not found; known jobs: \"j1\" (GET /jobs lists them)"]}`, ""},
		{"GET", "/jobs/nope/checkpoints", 404, `{"errors":["job \"nope\" not found; known jobs: \"j1\" (GET /jobs lists them)"]}`, ""},
		{"GET", "/jobs/j1/checkpoints/details/7", 404, `{"errors":["checkpoint 7 of job \"j1\" is not in its history, which keeps the most recent checkpoints (now none)"]}`, ""},
		{"GET", "/jobs/j1/checkpoints/details/x", 404, `{"errors":["checkpoint id \"x\" is not a positive integer"]}`, ""},
		{"GET", "/jobs/j1/checkpoints/details/7/subtasks/0", 404, `{"errors":["checkpoint 7 of job \"j1\" is not in its history, which keeps the most recent checkpoints (now none)"]}`, ""},
		{"GET", "/jobs/j1/checkpoints/7", 404, `{"errors":["checkpoint 7 of job \"j1\" is not in its history, which keeps the most recent checkpoints (now none)"]}`, ""},
		{"GET", "/jobs/j1/vertices/0/backpressure", 404, `{"errors":["vertex \"0\" of job \"j1\" not found; its vertices are none (GET /jobs/j1 lists them)"]}`, ""},
		{"GET", "/jobs/j1/vertices/0/watermarks", 404, `{"errors":["vertex \"0\" of job \"j1\" not found; its vertices are none (GET /jobs/j1 lists them)"]}`, ""},
		{"GET", "/nothing/here", 404, `{"errors":["no such path /nothing/here; see docs/rest.md for the endpoints"]}`, ""},
		{"DELETE", "/jobs/j1", 405, `{"errors":["DELETE is not allowed on /jobs/j1; use GET or PATCH or HEAD"]}`, "GET, PATCH, HEAD"},
		{"PUT", "/jobs/j1/checkpoints", 405, `{"errors":["PUT is not allowed on /jobs/j1/checkpoints; use GET or POST or HEAD"]}`, "GET, POST, HEAD"},
		{"POST", "/overview", 405, `{"errors":["POST is not allowed on /overview; use GET or HEAD"]}`, "GET, HEAD"},
		{"POST", "/metrics", 405, `{"errors":["POST is not allowed on /metrics; use GET or HEAD"]}`, "GET, HEAD"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4096)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		if got := strings.TrimSuffix(string(b[:n]), "\n"); resp.StatusCode != tc.code || got != tc.body || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s:\n got %d %s (Allow %q)\nwant %d %s (Allow %q)", tc.method, tc.path, resp.StatusCode, got, resp.Header.Get("Allow"), tc.code, tc.body, tc.allow)
		}
	}
}

// Without a metrics handler /metrics is an unknown path.
func TestNoMetrics(t *testing.T) {
	srv := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs()}))
	defer srv.Close()
	if code, body := call(t, "GET", srv.URL+"/metrics"); code != 404 || body != `{"errors":["no such path /metrics; see docs/rest.md for the endpoints"]}`+"\n" {
		t.Errorf("GET /metrics: %d %s", code, body)
	}
	if code, body := call(t, "GET", srv.URL+"/jobs"); code != 200 || body != `{"jobs":[]}`+"\n" {
		t.Errorf("GET /jobs: %d %s", code, body)
	}
}

func TestListen(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:0", "10.1.2.3:0"} {
		if _, err := rest.Listen(addr, false); !errors.Is(err, rest.ErrRemoteAddress) {
			t.Errorf("Listen(%q, false): %v, want ErrRemoteAddress", addr, err)
		}
	}
	if _, err := rest.Listen("8081", false); err == nil || !strings.Contains(err.Error(), `rest api address "8081"`) {
		t.Errorf("Listen without a port: %v", err)
	}
	ln, err := rest.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	_, err = rest.Listen(addr, false)
	if !errors.Is(err, rest.ErrAddressInUse) || !strings.Contains(err.Error(), addr) {
		t.Errorf("Listen on a used port: %v, want ErrAddressInUse naming %s", err, addr)
	}
	// Remote allowed: every interface (here: still a free port).
	ln2, err := rest.Listen(":0", true)
	if err != nil {
		t.Fatal(err)
	}
	ln2.Close()
	ln3, err := rest.Listen("localhost:0", false)
	if err != nil {
		t.Fatal(err)
	}
	// Serve and shut down.
	s := rest.Serve(ln3, rest.NewHandler(rest.Config{Jobs: jobs()}), nil)
	if code, _ := call(t, "GET", "http://"+s.Addr().String()+"/jobs"); code != 200 {
		t.Errorf("GET /jobs on the served listener: %d", code)
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", s.Addr().String()); err == nil {
		t.Error("the server still accepts connections after Shutdown")
	}
}

// TestTaskManagers serves a cluster's TaskManagers and counts their slots
// in the overview.
func TestTaskManagers(t *testing.T) {
	tms := []rest.TaskManagerInfo{
		{ID: "tm-a", Path: "127.0.0.1:4000", DataPort: "127.0.0.1:5000", Registered: 1_700_000_000_000, SlotsNumber: 2, FreeSlots: 1},
		{ID: "tm-b", Path: "127.0.0.1:4001", DataPort: "127.0.0.1:5001", MetricsAddr: "127.0.0.1:9249", Registered: 1_700_000_000_001, SlotsNumber: 3, FreeSlots: 0},
	}
	srv := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(), Version: "v0.test", TaskManagers: func() []rest.TaskManagerInfo { return tms }}))
	defer srv.Close()
	for path, want := range map[string]string{
		"/overview":     `{"jobs-running":0,"jobs-finished":0,"jobs-cancelled":0,"jobs-failed":0,"weir-version":"v0.test","taskmanagers":2,"slots-total":5,"slots-available":1}`,
		"/taskmanagers": `{"taskmanagers":[{"id":"tm-a","path":"127.0.0.1:4000","dataAddress":"127.0.0.1:5000","registered":1700000000000,"slotsNumber":2,"freeSlots":1},{"id":"tm-b","path":"127.0.0.1:4001","dataAddress":"127.0.0.1:5001","metricsAddress":"127.0.0.1:9249","registered":1700000000001,"slotsNumber":3,"freeSlots":0}]}`,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("GET %s = %s\nwant %s", path, got, want)
		}
	}
}
