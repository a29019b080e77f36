package rest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/rest"
)

// FuzzHandler sends random methods, paths, queries and bodies to the API
// over a fake job and TaskManager: no panic, and every answer but a
// redirect and /metrics is JSON.
func FuzzHandler(f *testing.F) {
	for _, s := range [][3]string{
		{"GET", "/jobs/j/vertices/0?x=1", ""},
		{"POST", "/jobs/j/savepoints", `{"target-directory":"../x","cancel-job":true}`},
		{"POST", "/jobs/j/stop", `{"targetDirectory":"/tmp"}{}`},
		{"GET", "/jobs/j/savepoints/0123456789abcdef0123456789abcdef", ""},
		{"PATCH", "/jobs/j?mode=cancel", ""},
		{"GET", "/jobmanager/metrics?get=a,,numRunningJobs", ""},
		{"GET", "/taskmanagers/tm/metrics?get=taskSlotsTotal", ""},
		{"DELETE", "/jobs/j/checkpoints/details/1/subtasks/x", "\x00"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	cfg := config.New()
	j := &cancelable{job: job{id: "j", name: "j", status: &jobstatus.JobStatus{}, cfg: cfg}}
	h := rest.NewHandler(rest.Config{
		Jobs:          jobs(j),
		TaskManagers:  func() []rest.TaskManagerInfo { return []rest.TaskManagerInfo{{ID: "tm", SlotsNumber: 2}} },
		Metrics:       http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("x 1\n")) }),
		ClusterConfig: cfg,
		SavepointsDir: filepath.Join(f.TempDir(), "savepoints"),
	})
	f.Fuzz(func(t *testing.T, method, target, body string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || method == "" || strings.ContainsAny(method, " \t\r\n") {
			return
		}
		r := &http.Request{Method: method, URL: u, RequestURI: target, Header: http.Header{}, Host: "weir", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code/100 == 3 || u.Path == "/metrics" {
			return
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: %d with Content-Type %q: %s", method, target, w.Code, ct, w.Body)
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s %s: %d, not JSON: %s", method, target, w.Code, w.Body)
		}
	})
}
