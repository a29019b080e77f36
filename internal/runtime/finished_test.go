package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/jobstatus"
)

// finishedJob records a run of job "demo" in a fresh folder as a job
// that FINISHED does, with one checkpoint left to discard, and returns
// its configuration.
func finishedJob(t *testing.T) JobConfig {
	t.Helper()
	start := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	st := &jobstatus.JobStatus{}
	rec := jobstatus.RecorderOf(st)
	rec.SetState(jobstatus.StateRunning, start)
	rec.SetState(jobstatus.StateFinished, start.Add(90*time.Second))
	rec.LastCheckpointID.Store(12)
	rec.CompletedCheckpoints.Store(11)
	rec.Restarts.Store(1)
	rec.SourceRecords.Store(20_000)
	cfg := JobConfig{JobName: "demo", CheckpointDir: t.TempDir(), Status: st}
	chk := filepath.Join(cfg.CheckpointDir, "demo", "chk-12")
	if err := os.MkdirAll(chk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(chk, "_metadata"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RecordFinished(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// RecordFinished leaves the marker with the run's figures and nothing
// else; a run from scratch is then refused with an error that names the
// run, its folder and every way forward.
func TestCheckFinishedRefusesRunFromScratch(t *testing.T) {
	cfg := finishedJob(t)
	jobDir := filepath.Join(cfg.CheckpointDir, "demo")
	ents, err := os.ReadDir(jobDir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "_finished.json" {
		t.Fatalf("the finished job's folder holds %v (%v), want only _finished.json", ents, err)
	}
	note, err := CheckFinished(JobConfig{JobName: "demo", CheckpointDir: cfg.CheckpointDir})
	if !errors.Is(err, ErrFinishedRun) || note != "" {
		t.Fatalf("CheckFinished = %q, %v; want ErrFinishedRun", note, err)
	}
	for _, want := range []string{
		"job demo already FINISHED: " + filepath.Join(jobDir, "_finished.json"),
		"finished at 2025-03-04T10:01:30Z",
		"final checkpoint 12, 11 checkpoints, 1 restarts, 20000 source records read",
		"--rerun", "--state-dir", "--job-name", "--from",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q:\n%v", want, err)
		}
	}
	// The refusal changed nothing: asked again, it refuses again.
	if _, err := CheckFinished(JobConfig{JobName: "demo", CheckpointDir: cfg.CheckpointDir}); !errors.Is(err, ErrFinishedRun) {
		t.Fatalf("second CheckFinished = %v, want the same refusal", err)
	}
}

// A run from a checkpoint or savepoint the user chose is not checked, and
// another job name in the same folder is another job.
func TestCheckFinishedLetsOtherRunsStart(t *testing.T) {
	cfg := finishedJob(t)
	for _, c := range []JobConfig{
		{JobName: "demo", CheckpointDir: cfg.CheckpointDir, FromPath: "/saves/savepoint-demo-7"},
		{JobName: "demo2", CheckpointDir: cfg.CheckpointDir},
		{JobName: "demo", CheckpointDir: t.TempDir()},
	} {
		if note, err := CheckFinished(c); note != "" || err != nil {
			t.Errorf("CheckFinished(%s in %s, from %q) = %q, %v; want a start", c.JobName, c.CheckpointDir, c.FromPath, note, err)
		}
	}
}

// Rerun starts a run from scratch with a note naming the finished run;
// the marker stays, so a plain run after a rerun that failed before its
// first checkpoint is refused still. Once the rerun has a checkpoint, a
// plain run resumes it.
func TestCheckFinishedRerun(t *testing.T) {
	cfg := finishedJob(t)
	note, err := CheckFinished(JobConfig{JobName: "demo", CheckpointDir: cfg.CheckpointDir, Rerun: true})
	if err != nil || !strings.Contains(note, "job demo: running again from scratch (--rerun) after its run that FINISHED at 2025-03-04T10:01:30Z (final checkpoint 12") {
		t.Fatalf("CheckFinished with Rerun = %q, %v", note, err)
	}
	plain := JobConfig{JobName: "demo", CheckpointDir: cfg.CheckpointDir}
	if _, err := CheckFinished(plain); !errors.Is(err, ErrFinishedRun) {
		t.Fatalf("plain run after a rerun with no checkpoint: %v, want the refusal", err)
	}
	chk := filepath.Join(cfg.CheckpointDir, "demo", "chk-3")
	if err := os.MkdirAll(chk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(chk, "_metadata"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if note, err := CheckFinished(plain); note != "" || err != nil {
		t.Fatalf("plain run with the rerun's checkpoint to resume: %q, %v; want a start", note, err)
	}
}

// A marker that does not decode fails the start, naming the file, rather
// than letting a run from scratch through.
func TestCheckFinishedCorruptMarker(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "demo", "_finished.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := CheckFinished(JobConfig{JobName: "demo", CheckpointDir: dir})
	if !errors.Is(err, storage.ErrCorrupt) || !strings.Contains(err.Error(), p) {
		t.Fatalf("CheckFinished = %v, want ErrCorrupt naming %s", err, p)
	}
}
