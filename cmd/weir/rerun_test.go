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
// cluster: the finished run's checkpoints are gone and its folder holds
// only the record of that run; the same command again is refused before
// the job starts, naming the run and the ways forward, whatever its sink
// (here into a new --out, which only that refusal can stop, and which
// stays unwritten); with --rerun it runs from scratch, the exactly-once
// file sink still refuses the first run's folder (its own check), and a
// new folder gets the whole output once.

// wantFinishedMarker fails unless jobDir holds only the finished-run
// marker.
func wantFinishedMarker(t *testing.T, jobDir string) {
	t.Helper()
	ents, err := os.ReadDir(jobDir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "_finished.json" {
		t.Fatalf("the finished job's folder %s holds %v (%v), want only its finished-run marker", jobDir, ents, err)
	}
}

// wantRefused fails unless stderr holds the refusal of job demo's run
// from scratch, naming its marker and the ways forward.
func wantRefused(t *testing.T, r result, marker, logs string) {
	t.Helper()
	for _, want := range []string{"job demo already FINISHED: " + marker + " records its run that finished at ", "--rerun", "--state-dir", "--from"} {
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Fatalf("rerun without --rerun: exit %d, want 1 with %q:\n%s\n%s", r.code, want, r.stderr, logs)
		}
	}
}

// wantNothingWritten fails if the folder holds any file: the demo's
// flag checks may create --out, but a refused run writes nothing into it.
func wantNothingWritten(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) || len(ents) > 0 {
		t.Fatalf("the refused run wrote %v into %s (%v)", ents, dir, err)
	}
}

func TestRerunFinishedLocal(t *testing.T) {
	const events = 20_000
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	args := func(out string, extra ...string) []string {
		return append([]string{"run", "demo", "--events", "20000", "--checkpoint-interval", "20ms", "--state-dir", state, "--out", filepath.Join(dir, out), "-q"}, extra...)
	}
	r := runWeir(t, time.Minute, args("out")...)
	wantExit(t, r, 0)
	if want := "job demo: starting from scratch (no checkpoint in " + filepath.Join(state, "demo") + ")"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	wantFinishedMarker(t, filepath.Join(state, "demo"))
	r = runWeir(t, time.Minute, args("out2")...)
	wantRefused(t, r, filepath.Join(state, "demo", "_finished.json"), "")
	if strings.Contains(r.stderr, "starting from scratch") {
		t.Errorf("the refused run got as far as its start line:\n%s", r.stderr)
	}
	wantNothingWritten(t, filepath.Join(dir, "out2"))
	r = runWeir(t, time.Minute, args("out", "--rerun")...)
	if r.code != 1 || !strings.Contains(r.stderr, "job demo: running again from scratch (--rerun)") ||
		!strings.Contains(r.stderr, filepath.Join(dir, "out")+" already holds committed output of an earlier run") {
		t.Fatalf("--rerun into the same --out: exit %d, want 1 naming the folder:\n%s", r.code, r.stderr)
	}
	wantExit(t, runWeir(t, time.Minute, args("out2", "--rerun")...), 0)
	for _, out := range []string{"out", "out2"} {
		if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, filepath.Join(dir, out))); d != "" {
			t.Fatalf("%s: %s", out, d)
		}
	}
	wantFinishedMarker(t, filepath.Join(state, "demo"))
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
	wantFinishedMarker(t, jobDir)
	out2 := filepath.Join(c.dir, "out2")
	// Refused by the JobManager at submission: nothing is deployed.
	r := runWeir(t, time.Minute, append(args, "--out", out2)...)
	wantRefused(t, r, filepath.Join(jobDir, "_finished.json"), c.logs())
	wantNothingWritten(t, out2)
	// Refused by the sink at once: a restart would not change the folder.
	r = runWeir(t, time.Minute, append(args, "--rerun")...)
	if r.code != 1 || !strings.Contains(r.stderr, "job demo FAILED") || !strings.Contains(r.stderr, out+" already holds committed output of an earlier run") {
		t.Fatalf("--rerun into the same --out: exit %d, want 1 naming the folder:\n%s\n%s", r.code, r.stderr, c.logs())
	}
	if r := runWeir(t, time.Minute, append(args, "--out", out2, "--rerun")...); r.code != 0 {
		t.Fatalf("--rerun into a new --out: exit %d\n%s\n%s", r.code, r.stderr, c.logs())
	}
	for _, o := range []string{out, out2} {
		if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, o)); d != "" {
			t.Fatalf("%s: %s", o, d)
		}
	}
	if n := strings.Count(c.jm.stderr(), "job demo: starting from scratch"); n != 3 {
		t.Errorf("the JobManager said %d times that job demo starts from scratch, want 3:\n%s", n, tail(c.jm.stderr(), 3000))
	}
	if n := strings.Count(c.jm.stderr(), "job demo: running again from scratch (--rerun)"); n != 2 {
		t.Errorf("the JobManager said %d times that job demo runs again, want 2:\n%s", n, tail(c.jm.stderr(), 3000))
	}
	wantFinishedMarker(t, jobDir)
}
