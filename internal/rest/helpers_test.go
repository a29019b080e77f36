package rest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/rest"
	"github.com/weirstream/weir/internal/runtime"
)

// job is a rest.Job over a status and a configuration, and the control
// of the Env that runs it (nil: a status nothing runs on, whose commands
// answer that it is not running).
type job struct {
	id, name string
	status   *jobstatus.JobStatus
	control  jobstatus.Control
	cfg      *config.Config
}

func (j *job) ID() string                   { return j.id }
func (j *job) Name() string                 { return j.name }
func (j *job) Status() *jobstatus.JobStatus { return j.status }
func (j *job) Control() jobstatus.Control {
	if j.control == nil {
		return runtime.NewJobControl(j.status)
	}
	return j.control
}
func (j *job) Config() *config.Config { return j.cfg }

func jobs(js ...rest.Job) func() []rest.Job { return func() []rest.Job { return js } }

// call sends a request to url and returns the status and body.
func call(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasSuffix(url, "/metrics") && ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, url, ct)
	}
	return resp.StatusCode, string(b)
}

// getJSON GETs url, wants 200 and decodes the body into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, body := call(t, http.MethodGet, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("GET %s: decode %s: %v", url, body, err)
	}
}

// waitFor polls cond every millisecond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
