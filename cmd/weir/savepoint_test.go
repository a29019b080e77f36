package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// weir savepoint and weir stop --savepoint against a running demo, then a
// resume from the stop savepoint at another parallelism into the same
// output folder: exactly the failure-free output.
func TestSavepointStopAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary for seconds")
	}
	const n, k = 300_000, 1000
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	addr := freePort(t)
	run := startWeir(t, 2*time.Minute, "run", "demo", "--events", fmt.Sprint(n), "--rate", "100000", "--parallelism", "2",
		"--checkpoint-interval", "100ms", "--state-dir", filepath.Join(dir, "state"), "--out", out,
		"--rest-address", addr, "-D", "state.savepoints.dir="+filepath.Join(dir, "saves"), "-v", "-q")
	run.waitCompleted(t, 2)
	r := runWeir(t, time.Minute, "savepoint", "demo", "--rest-address", addr, "--target", filepath.Join(dir, "saves"))
	wantExit(t, r, 0)
	if !strings.HasPrefix(strings.TrimSpace(r.stdout), filepath.Join(dir, "saves", "savepoint-demo-")) {
		t.Fatalf("savepoint printed %q", r.stdout)
	}
	r = runWeir(t, time.Minute, "stop", "demo", "--rest-address", addr, "--savepoint", filepath.Join(dir, "saves"))
	wantExit(t, r, 0)
	stopped := strings.TrimSpace(r.stdout)
	first := run.wait()
	wantExit(t, first, 0)
	if got := committed(t, out); len(got) >= n {
		t.Fatalf("the stopped run committed all %d lines; lower the rate", n)
	}
	r = runWeir(t, 2*time.Minute, "run", "demo", "--events", fmt.Sprint(n), "--parallelism", "3",
		"--from-savepoint", stopped, "--state-dir", filepath.Join(dir, "state2"), "--out", out, "-q")
	wantExit(t, r, 0)
	if d := demo.Diff(demo.Expected(n, k), committed(t, out)); d != "" {
		t.Fatal(d)
	}
	// A job that is not running answers with a clear error.
	r = runWeir(t, time.Minute, "savepoint", "demo", "--rest-address", addr, "--target", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "is a job running with --rest-address") {
		t.Fatalf("savepoint without a job: exit %d, %s", r.code, r.stderr)
	}
}
