package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testutil"
)

// A JobManager with security.rest.token-file: every path answers 401
// without the token and as usual with it; /healthz and /readyz stay open;
// the client commands send the token from -D.
func TestJobManagerRESTToken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a JobManager process")
	}
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("jm-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rpc, rest := testutil.FreeAddr(t), testutil.FreeAddr(t)
	jm := startWeir(t, time.Minute, "jobmanager", "--rpc-address", rpc, "--rest-address", rest, "--state-dir", filepath.Join(dir, "jm"),
		"-D", "security.rest.token-file="+tok)
	get := func(path, token string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+rest+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(20 * time.Second)
	for get("/readyz", "") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("JobManager not ready; stderr:\n%s", tail(jm.stderr(), 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range []string{"/overview", "/jobs", "/taskmanagers", "/config", "/jobmanager/config", "/jobmanager/metrics", "/metrics"} {
		if code := get(p, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", p, code)
		}
		if code := get(p, "wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d, want 401", p, code)
		}
		if code := get(p, "jm-token"); code != http.StatusOK {
			t.Errorf("GET %s with the token: %d, want 200", p, code)
		}
	}
	if code := get("/healthz", ""); code != http.StatusOK {
		t.Errorf("GET /healthz without the token: %d", code)
	}
	r := runWeir(t, time.Minute, "list", "--rest-address", rest, "-D", "security.rest.token-file="+tok)
	wantExit(t, r, 0)
	r = runWeir(t, time.Minute, "list", "--rest-address", rest)
	if r.code == 0 {
		t.Errorf("list without the token: exit 0, want an error")
	}
}
