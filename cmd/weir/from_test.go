package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// demoArgs are the arguments of a demo run over events at rate into dir's
// state and out folders.
func demoArgs(dir string, events int, rate string, extra ...string) []string {
	args := []string{"run", "demo", "--events", strconv.Itoa(events), "--rate", rate, "--parallelism", "2",
		"--checkpoint-interval", "50ms", "--state-dir", filepath.Join(dir, "state"), "--out", filepath.Join(dir, "out"), "-q"}
	return append(args, extra...)
}

// chkPath is the folder of checkpoint id of the demo job in dir.
func chkPath(dir string, id int) string {
	return filepath.Join(dir, "state", "demo", fmt.Sprintf("chk-%d", id))
}

// killMidRun starts the demo with -v, SIGKILLs it once checkpoint minID has
// completed and returns the completed checkpoints left on disk.
func killMidRun(t *testing.T, args []string, jobDir string, minID int) []int {
	t.Helper()
	r := startWeir(t, time.Minute, append(args, "-v")...)
	r.waitCompleted(t, minID)
	if !r.kill() {
		t.Fatalf("the run ended before it could be killed; make it longer")
	}
	ids := completedCheckpoints(t, jobDir)
	if len(ids) < 2 {
		t.Fatalf("want at least 2 completed checkpoints after the kill, have %v", ids)
	}
	return ids
}

// TestFromNewestAfterKill: a run killed mid-way and started again with
// --from its newest checkpoint (instead of implicitly) completes with the
// exact failure-free output, as a plain restart would.
func TestFromNewestAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for about 3 s")
	}
	const events = 600_000
	dir := t.TempDir()
	args := demoArgs(dir, events, "200000")
	ids := killMidRun(t, args, filepath.Join(dir, "state", "demo"), 3)
	newest := ids[len(ids)-1]
	res := runWeir(t, time.Minute, append(args, "--from", chkPath(dir, newest))...)
	wantExit(t, res, 0)
	out := filepath.Join(dir, "out")
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatalf("after --from chk-%d: %s", newest, d)
	}
	assertNoInProgress(t, out)
}

// TestFromCorrupt: a corrupt checkpoint given with --from (as folder or as
// _metadata) fails the run before it starts, with a message naming the
// damaged file, and commits nothing.
func TestFromCorrupt(t *testing.T) {
	dir := t.TempDir()
	// Killed, not run to its end: a finished job leaves no checkpoint.
	ids := killMidRun(t, demoArgs(dir, 1_000_000, "200000"), filepath.Join(dir, "state", "demo"), 2)
	chk := chkPath(dir, ids[len(ids)-1])
	damaged := corruptCheckpoint(t, chk)
	for i, from := range []string{chk, filepath.Join(chk, "_metadata")} {
		out := filepath.Join(dir, fmt.Sprintf("out-%d", i))
		args := demoArgs(dir, 100_000, "0", "--out", out, "--from", from)
		res := runWeir(t, time.Minute, args...)
		if res.code != 1 && res.code != 2 {
			t.Errorf("--from %s: exit code %d, want 1 or 2; stderr:\n%s", from, res.code, res.stderr)
		}
		wantContains(t, res.stderr, damaged, "corrupt")
		if _, err := os.Stat(out); err != nil {
			continue // refused before the out folder was even created
		}
		if lines := committed(t, out); len(lines) != 0 {
			t.Errorf("--from %s: %d lines committed by a run that must not start", from, len(lines))
		}
	}
}

// TestFromNotACheckpoint: --from naming an existing path that is not a
// checkpoint is bad usage like a missing path: exit code 2, before any
// work, with a message naming the path.
func TestFromNotACheckpoint(t *testing.T) {
	dir := t.TempDir()
	notChk := filepath.Join(dir, "not-a-checkpoint")
	if err := os.Mkdir(notChk, 0o755); err != nil {
		t.Fatal(err)
	}
	notMeta := filepath.Join(dir, "chk-3")
	if err := os.WriteFile(notMeta, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{notChk, notMeta} {
		res := runWeir(t, time.Minute, demoArgs(dir, 1000, "0", "--from", from)...)
		if res.code != 2 {
			t.Errorf("--from %s: exit code %d, want 2 (bad usage, like a missing path); stderr:\n%s", from, res.code, res.stderr)
		}
		wantContains(t, res.stderr, "--from", from)
	}
}

var restoringRE = regexp.MustCompile(`msg=restoring checkpoint=(\d+) `)

// TestFromOlderCheckpoint forks a job from an older retained checkpoint, the
// exactly-once way: together with a copy of its output taken at that
// checkpoint. Run A is killed right after checkpoint M completed, its
// output folder is copied, and A is resumed and killed again after
// checkpoint M+2 (checkpoints up to K > M, all retained). Run B then starts
// from chk-M into the copy, with one failure injected before B completes a
// checkpoint of its own.
//
// B must commit exactly the failure-free output into the copy, and its
// restart must restore chk-M again: the newer checkpoints in the job folder
// belong to A's history, whose transactions the copy does not hold.
func TestFromOlderCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo three times")
	}
	const events = 300_000
	dir := t.TempDir()
	jobDir := filepath.Join(dir, "state", "demo")
	keep := []string{"-D", "state.checkpoints.num-retained=1000"}
	runA := demoArgs(dir, events, "200000", keep...)
	ids := killMidRun(t, runA, jobDir, 2)
	m := ids[len(ids)-1]
	fork := filepath.Join(dir, "fork-out")
	copyDir(t, filepath.Join(dir, "out"), fork)
	if ids := killMidRun(t, runA, jobDir, m+2); ids[len(ids)-1] <= m {
		t.Fatalf("run A left checkpoints %v, want some newer than %d", ids, m)
	}

	// Fault seed 4 arms its failure after 2102 of 300000 events, long
	// before B ends; with periodic checkpoints off, B's only checkpoint of
	// its own is the final one, so the failure comes before it completes.
	runB := demoArgs(dir, events, "0", append(keep, "--out", fork, "--from", chkPath(dir, m),
		"--checkpoint-interval", "0", "--inject-failures", "1", "--fault-seed", "4", "-v")...)
	res := runWeir(t, time.Minute, runB...)
	restores := restoringRE.FindAllStringSubmatch(res.stderr, -1)
	if len(restores) != 2 {
		t.Errorf("%d restores logged, want 2 (the start and the restart after the injected failure)", len(restores))
	}
	for i, r := range restores {
		if r[1] != strconv.Itoa(m) {
			t.Errorf("attempt %d restored checkpoint %s, want the --from checkpoint %d", i, r[1], m)
		}
	}
	wantExit(t, res, 0)
	wantFired(t, res.stderr, 1)
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, fork)); d != "" {
		t.Fatalf("forked output: %s", d)
	}
	assertNoInProgress(t, fork)
}

// copyDir copies the regular files of src, hidden ones included, into a new
// folder dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
