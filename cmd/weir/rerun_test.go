package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// The rerun of a job that FINISHED, the same in a local run and on a
// cluster: the finished run's checkpoints are gone, the rerun starts from
// scratch (and says so), the exactly-once file sink refuses the first
// run's folder, naming it, and a new folder gets the whole output once.

func TestRerunFinishedLocal(t *testing.T) {
	const events = 20_000
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	args := func(out string) []string {
		return []string{"run", "demo", "--events", "20000", "--checkpoint-interval", "20ms", "--state-dir", state, "--out", filepath.Join(dir, out), "-q"}
	}
	r := runWeir(t, time.Minute, args("out")...)
	wantExit(t, r, 0)
	if want := "job demo: starting from scratch (no checkpoint in " + filepath.Join(state, "demo") + ")"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "demo")); !os.IsNotExist(err) {
		t.Fatalf("the finished job's checkpoint folder is still there (%v)", err)
	}
	r = runWeir(t, time.Minute, args("out")...)
	if r.code != 1 || !strings.Contains(r.stderr, "job demo: starting from scratch") ||
		!strings.Contains(r.stderr, filepath.Join(dir, "out")+" already holds committed output of an earlier run") {
		t.Fatalf("rerun into the same --out: exit %d, want 1 naming the folder:\n%s", r.code, r.stderr)
	}
	wantExit(t, runWeir(t, time.Minute, args("out2")...), 0)
	for _, out := range []string{"out", "out2"} {
		if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, filepath.Join(dir, out))); d != "" {
			t.Fatalf("%s: %s", out, d)
		}
	}
}

func TestClusterRerunFinished(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of two processes")
	}
	const events = 20_000
	c := startE2ECluster(t, 1, 2)
	args, out := c.demoArgs(events, 0, 2)
	if r := runWeir(t, time.Minute, args...); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s\n%s", r.code, r.stderr, c.logs())
	}
	jobDir := filepath.Join(c.dir, "jm", "checkpoints", "demo")
	if _, err := os.Stat(jobDir); !os.IsNotExist(err) {
		t.Fatalf("the finished job's checkpoint folder %s is still there (%v)", jobDir, err)
	}
	// Refused by the sink at once: a restart would not change the folder.
	r := runWeir(t, time.Minute, args...)
	if r.code != 1 || !strings.Contains(r.stderr, "job demo FAILED") || !strings.Contains(r.stderr, out+" already holds committed output of an earlier run") {
		t.Fatalf("rerun into the same --out: exit %d, want 1 naming the folder:\n%s\n%s", r.code, r.stderr, c.logs())
	}
	out2 := filepath.Join(c.dir, "out2")
	if r := runWeir(t, time.Minute, append(args, "--out", out2)...); r.code != 0 {
		t.Fatalf("rerun into a new --out: exit %d\n%s\n%s", r.code, r.stderr, c.logs())
	}
	for _, o := range []string{out, out2} {
		if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, o)); d != "" {
			t.Fatalf("%s: %s", o, d)
		}
	}
	if n := strings.Count(c.jm.stderr(), "job demo: starting from scratch"); n != 3 {
		t.Errorf("the JobManager said %d times that job demo starts from scratch, want 3:\n%s", n, tail(c.jm.stderr(), 3000))
	}
}
