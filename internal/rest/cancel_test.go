package rest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/rest"
)

// cancelable is a job that can be canceled through the API.
type cancelable struct {
	job
	canceled int
}

func (c *cancelable) Cancel() { c.canceled++ }

// PATCH /jobs/{id}?mode=cancel cancels a rest.Canceler once, is refused
// for a job that is not one, and refuses other modes.
func TestCancel(t *testing.T) {
	local := &cancelable{job: job{id: "local", name: "local", status: &jobstatus.JobStatus{}, cfg: config.New()}}
	other := &job{id: "other", name: "other", status: &jobstatus.JobStatus{}, cfg: config.New()}
	srv := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(local, other)}))
	defer srv.Close()
	if code, body := call(t, http.MethodPatch, srv.URL+"/jobs/local?mode=cancel"); code != http.StatusAccepted || local.canceled != 1 {
		t.Fatalf("cancel: %d %s, canceled %d times", code, body, local.canceled)
	}
	if code, body := call(t, http.MethodPatch, srv.URL+"/jobs/local?mode=stop"); code != http.StatusBadRequest || local.canceled != 1 {
		t.Fatalf("mode=stop: %d %s, canceled %d times", code, body, local.canceled)
	}
	if code, body := call(t, http.MethodPatch, srv.URL+"/jobs/other?mode=cancel"); code != http.StatusMethodNotAllowed || !strings.Contains(body, "cancel --jobmanager") {
		t.Fatalf("cancel of a job without Cancel: %d %s", code, body)
	}
}
