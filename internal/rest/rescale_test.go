package rest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/rest"
)

// rescaler is a Control that records the rescale it was asked for.
type rescaler struct {
	jobstatus.Control
	got jobstatus.Rescale
	err error
}

func (r *rescaler) Rescale(_ context.Context, rs jobstatus.Rescale) (jobstatus.RescaleResult, error) {
	r.got = rs
	return jobstatus.RescaleResult{Checkpoint: 7, Parallelism: map[string]int{"map": 3}}, r.err
}

func put(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// PUT /jobs/{id}/resource-requirements maps Flink's body onto a rescale
// (vertex ids, operator uids, "*" for the default) and answers its
// result; bad bodies, jobs that cannot rescale and jobs not running get
// clear errors. GET answers the running parallelisms.
func TestResourceRequirements(t *testing.T) {
	st := &jobstatus.JobStatus{}
	jobstatus.RecorderOf(st).SetVertices([]jobstatus.VertexInfo{{ID: 0, Name: "src", Parallelism: 1}, {ID: 1, Name: "map", Parallelism: 2}}, 3)
	ctl := &rescaler{}
	j := &job{id: "j", name: "j", status: st, control: ctl, cfg: config.New()}
	plain := &job{id: "plain", name: "plain", status: st, cfg: config.New()}
	srv := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(j, plain)}))
	defer srv.Close()

	var got rest.ResourceRequirements
	getJSON(t, srv.URL+"/jobs/j/resource-requirements", &got)
	if got["1"].Parallelism.UpperBound != 2 || got["0"].Parallelism.UpperBound != 1 || len(got) != 2 {
		t.Fatalf("GET: %+v", got)
	}
	code, body := put(t, srv.URL+"/jobs/j/resource-requirements", `{"1": {"parallelism": {"lowerBound": 1, "upperBound": 4}}, "sum": {"parallelism": {"lowerBound": 1, "upperBound": 2}}, "*": {"parallelism": {"lowerBound": 1, "upperBound": 3}}}`)
	if code != http.StatusOK || !strings.Contains(body, `"checkpoint":7`) {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if ctl.got.Parallelism != 3 || ctl.got.ByVertex[1] != 4 || ctl.got.Vertices["sum"] != 2 {
		t.Fatalf("PUT asked for %+v", ctl.got)
	}
	for _, c := range []struct {
		job, body string
		code      int
		says      string
	}{
		{"j", `{}`, http.StatusBadRequest, "upperBound"},
		{"j", `{"1": {"parallelism": {"lowerBound": 3, "upperBound": 2}}}`, http.StatusBadRequest, "lowerBound"},
		{"plain", `{"1": {"parallelism": {"lowerBound": 1, "upperBound": 2}}}`, http.StatusConflict, "not running"},
	} {
		code, body := put(t, srv.URL+"/jobs/"+c.job+"/resource-requirements", c.body)
		if code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("PUT %s %s: %d %s, want %d saying %q", c.job, c.body, code, body, c.code, c.says)
		}
	}
	ctl.err = errors.New("rescale: operator \"x\": parallelism 300 exceeds max parallelism 128")
	if code, body := put(t, srv.URL+"/jobs/j/resource-requirements", `{"1": {"parallelism": {"lowerBound": 1, "upperBound": 300}}}`); code != http.StatusBadRequest || !strings.Contains(body, "max parallelism") {
		t.Errorf("PUT with the rescale refused: %d %s", code, body)
	}
}
