package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// weir savepoint (with an absolute and a relative --target) and weir stop
// --savepoint against a running demo, then a resume from the stop
// savepoint at another parallelism into the same output folder: exactly
// the failure-free output.
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
	early := strings.TrimSpace(r.stdout)
	// A relative name is taken under the local run's state.savepoints.dir,
	// not under the client's working directory.
	r = runWeirIn(t, t.TempDir(), time.Minute, "savepoint", "demo", "--rest-address", addr, "--target", "rel")
	wantExit(t, r, 0)
	if !strings.HasPrefix(strings.TrimSpace(r.stdout), filepath.Join(dir, "saves", "rel", "savepoint-demo-")) {
		t.Fatalf("savepoint --target rel printed %q, want a folder under %s", r.stdout, filepath.Join(dir, "saves", "rel"))
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
	// The earlier savepoint into the same output, which has moved past
	// it: its open transaction was committed since, so restoring it would
	// write those records again. The run must refuse, at once, and leave
	// the output as it was (fault class 5: an old savepoint into live
	// output).
	r = runWeir(t, 2*time.Minute, "run", "demo", "--events", fmt.Sprint(n), "--parallelism", "2",
		"--from-savepoint", early, "--state-dir", filepath.Join(dir, "state3"), "--out", out, "-q")
	if r.code != 1 || !strings.Contains(r.stderr, "already committed") {
		t.Fatalf("the earlier savepoint into the output past it: exit %d, want 1 naming the committed transaction; stderr (end):\n%s", r.code, tail(r.stderr, 2000))
	}
	if d := demo.Diff(demo.Expected(n, k), committed(t, out)); d != "" {
		t.Fatalf("after the refused restore of an older savepoint: %s", d)
	}
	// A job that is not running answers with a clear error.
	r = runWeir(t, time.Minute, "savepoint", "demo", "--rest-address", addr, "--target", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "is a job running with --rest-address") {
		t.Fatalf("savepoint without a job: exit %d, %s", r.code, r.stderr)
	}
}

// runWeirIn is runWeir in working directory dir.
func runWeirIn(t *testing.T, dir string, timeout time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, weirBin, args...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); cmd.ProcessState == nil {
		t.Fatalf("weir %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("weir %s did not end within %s; stderr (end):\n%s", strings.Join(args, " "), timeout, tail(stderr.String(), 2000))
	}
	return result{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), stdout: stdout.String()}
}

// weir savepoint --target NAME and weir stop --savepoint NAME with a
// relative NAME, run from a working directory of their own against a
// cluster: the name travels as given and the JobManager takes it under
// its state.savepoints.dir (here its default, <its --state-dir>/savepoints).
// The client used to send its working directory joined with NAME, which
// the JobManager refused as outside the folder. A name with ".." is
// refused by the client, naming the flag, and the job keeps running.
func TestClusterSavepointRelativeTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of two processes for seconds")
	}
	c := startE2ECluster(t, 1, 2)
	args, _ := c.demoArgs(0, 2000, 1, "--detached")
	if r := runWeir(t, time.Minute, args...); r.code != 0 {
		t.Fatalf("submit: exit %d\n%s", r.code, r.stderr)
	}
	saves := filepath.Join(c.dir, "jm", "savepoints")
	elsewhere := t.TempDir()
	landed := func(what string, r result, name string) string {
		t.Helper()
		sp := strings.TrimSpace(r.stdout)
		if r.code != 0 || !strings.HasPrefix(sp, filepath.Join(saves, name, "savepoint-demo-")) {
			t.Fatalf("%s: exit %d, printed %q, want a folder under %s\n%s\n%s", what, r.code, sp, filepath.Join(saves, name), r.stderr, c.logs())
		}
		if md, _ := filepath.Glob(filepath.Join(sp, "chk-*", "_metadata")); len(md) != 1 {
			t.Fatalf("%s: no savepoint metadata in %s (found %q)", what, sp, md)
		}
		if _, err := os.Stat(filepath.Join(elsewhere, name)); err == nil {
			t.Fatalf("%s: %s was created in the client's working directory", what, name)
		}
		return sp
	}
	// The job may not have its first checkpoint yet: a savepoint needs the
	// job running, so try for a while.
	var r result
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r = runWeirIn(t, elsewhere, time.Minute, "savepoint", "demo", "--jobmanager", c.rpc, "--target", "manual")
		if r.code == 0 || time.Now().After(deadline) {
			break
		}
	}
	landed("savepoint --target manual", r, "manual")
	r = runWeirIn(t, elsewhere, time.Minute, "stop", "demo", "--jobmanager", c.rpc, "--savepoint", "../escape")
	wantExit(t, r, 2)
	wantContains(t, r.stderr, "--savepoint ../escape", "state.savepoints.dir", `must not contain ".."`)
	r = runWeirIn(t, elsewhere, time.Minute, "stop", "demo", "--jobmanager", c.rpc, "--savepoint", "final")
	landed("stop --savepoint final", r, "final")
	if _, err := os.Stat(filepath.Join(c.dir, "jm", "escape")); err == nil {
		t.Error("the refused ../escape was created next to state.savepoints.dir")
	}
}
