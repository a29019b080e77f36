package rest_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/rest"
)

// Savepoint targets outside state.savepoints.dir are refused with 400
// naming the key: absolute elsewhere, "..", a symbolic link out of it,
// another scheme. The job is not running, so an accepted target answers
// 409 (the check comes first).
func TestSavepointTargets(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "savepoints")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "in"), filepath.Join(root, "in-link")); err != nil {
		t.Fatal(err)
	}
	j := &job{id: "j", name: "j", status: &jobstatus.JobStatus{}, cfg: config.New()}
	srv := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(j), SavepointsDir: root}))
	defer srv.Close()
	any := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(j), SavepointsDir: root, AllowAnySavepointTarget: true}))
	defer any.Close()
	for _, tc := range []struct {
		target string
		code   int
	}{
		{"", 409}, {"a", 409}, {"a/b", 409}, {root, 409}, {filepath.Join(root, "x"), 409}, {"file://" + filepath.Join(root, "x"), 409}, {"in-link/x", 409},
		{"/tmp/elsewhere", 400}, {dir, 400}, {"..", 400}, {"../x", 400}, {"a/../../x", 400}, {root + "/../x", 400},
		{"out", 400}, {"out/x", 400}, {filepath.Join(root, "out", "y"), 400}, {"s3://bucket/x", 400}, {root + "x", 400}, {"a\x00b", 400},
	} {
		body := `{"target-directory":` + strings.ReplaceAll(strings.ReplaceAll(`"`+tc.target+`"`, "\\", `\\`), "\x00", `\u0000`) + `}`
		for _, url := range []string{srv.URL + "/jobs/j/savepoints", srv.URL + "/jobs/j/stop"} {
			if strings.HasSuffix(url, "stop") {
				if tc.target == "" {
					continue
				}
				body = strings.Replace(body, "target-directory", "targetDirectory", 1)
			}
			resp, err := http.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 1024)
			n, _ := resp.Body.Read(b)
			resp.Body.Close()
			if resp.StatusCode != tc.code || (tc.code == 400 && !strings.Contains(string(b[:n]), "state.savepoints.dir")) {
				t.Errorf("POST %s %s: %d %s, want %d", url, body, resp.StatusCode, b[:n], tc.code)
			}
		}
	}
	resp, err := http.Post(any.URL+"/jobs/j/savepoints", "application/json", strings.NewReader(`{"target-directory":"/tmp/elsewhere"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 409 {
		t.Errorf("allow-any-target: %d, want 409 (accepted, job not running)", resp.StatusCode)
	}
	// Bodies over 1 MiB are refused.
	resp, err = http.Post(srv.URL+"/jobs/j/savepoints", "application/json", strings.NewReader(`{"target-directory":"`+strings.Repeat("a", 2<<20)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("2 MiB body: %d, want 400", resp.StatusCode)
	}
}

// With a token every path answers 401 without it (or with a wrong one)
// and as without a token with it; /healthz and /readyz stay open.
func TestToken(t *testing.T) {
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte("s3cret\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := rest.ReadTokenFile(tokFile)
	if err != nil || tok != "s3cret" {
		t.Fatalf("ReadTokenFile: %q %v", tok, err)
	}
	if err := os.WriteFile(tokFile, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := rest.ReadTokenFile(tokFile); err == nil || !strings.Contains(err.Error(), "security.rest.token-file") {
		t.Errorf("empty token file: %v", err)
	}
	j := &job{id: "j", name: "j", status: &jobstatus.JobStatus{}, cfg: config.New()}
	tms := func() []rest.TaskManagerInfo { return []rest.TaskManagerInfo{{ID: "tm"}} }
	open := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(j), TaskManagers: tms}))
	defer open.Close()
	guarded := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(j), TaskManagers: tms, Token: tok}))
	defer guarded.Close()
	for _, p := range []string{"/config", "/overview", "/jobs", "/jobs/overview", "/jobs/j", "/jobs/j/plan", "/jobs/j/config", "/jobs/j/exceptions",
		"/jobs/j/checkpoints", "/jobs/j/checkpoints/config", "/jobmanager/config", "/jobmanager/metrics", "/taskmanagers", "/taskmanagers/tm",
		"/taskmanagers/tm/metrics", "/nothing"} {
		want, _ := call(t, "GET", open.URL+p)
		for _, h := range []string{"", "Bearer wrong", "Basic czNjcmV0", "Bearer s3cret"} {
			req, _ := http.NewRequest("GET", guarded.URL+p, nil)
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if w := map[bool]int{true: want, false: 401}[h == "Bearer s3cret"]; resp.StatusCode != w {
				t.Errorf("GET %s with %q: %d, want %d", p, h, resp.StatusCode, w)
			}
		}
	}
	for _, m := range []string{"POST /jobs/j/checkpoints", "POST /jobs/j/savepoints", "POST /jobs/j/stop", "PATCH /jobs/j"} {
		method, p, _ := strings.Cut(m, " ")
		if code, body := call(t, method, guarded.URL+p); code != 401 || !strings.Contains(body, "Bearer") {
			t.Errorf("%s without a token: %d %s", m, code, body)
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, _ := call(t, "GET", guarded.URL+p); code != 200 {
			t.Errorf("GET %s without a token: %d, want 200", p, code)
		}
	}
}
