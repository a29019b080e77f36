package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

var checkpointsRE = regexp.MustCompile(`checkpoints (\d+) \(last #(\d+)`)

// TestConfigFileKeys runs the demo with a YAML config (nested and flat keys)
// setting the checkpoint interval and the number of retained checkpoints,
// and no --checkpoint-interval flag: the interval must be the file's (the
// demo's default of 1 s would give at most two checkpoints in this run).
// A second run of it (--rerun: the first run FINISHED, so it left no
// checkpoint, only its record), killed after checkpoint 6, must have kept
// exactly the 2 newest completed checkpoints in the job folder.
func TestConfigFileKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "weir.yaml")
	yaml := "execution:\n  checkpointing:\n    interval: 40 ms\nstate.checkpoints.num-retained: 2\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	const events = 200_000
	out := filepath.Join(dir, "out")
	res := runWeir(t, time.Minute, "run", "demo", "--events", strconv.Itoa(events), "--rate", "250000", "-p", "2",
		"--config", cfg, "--state-dir", filepath.Join(dir, "state"), "--out", out, "-q")
	wantExit(t, res, 0)
	m := checkpointsRE.FindStringSubmatch(res.stderr)
	if m == nil {
		t.Fatalf("no checkpoint count in the summary:\n%s", res.stderr)
	}
	n, _ := strconv.Atoi(m[1])
	if n < 5 {
		t.Fatalf("%d checkpoints completed in a 0.8 s run: the 40 ms interval of %s was not used", n, cfg)
	}
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatal(d)
	}
	jobDir := filepath.Join(dir, "state", "demo")
	r := startWeir(t, time.Minute, "run", "demo", "--events", strconv.Itoa(events), "--rate", "50000", "-p", "2",
		"--config", cfg, "--state-dir", filepath.Join(dir, "state"), "--out", filepath.Join(dir, "out2"), "-q", "-v", "--rerun")
	r.waitCompleted(t, 6)
	// Retention follows each completion; while the run goes on, the folder
	// must settle on the 2 newest completed checkpoints between them.
	var names []string
	settled := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		entries, err := os.ReadDir(jobDir)
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, e := range entries {
			// The first run's record stays until this rerun finishes.
			if e.Name() != "_finished.json" {
				names = append(names, e.Name())
			}
		}
		if ids := completedCheckpoints(t, jobDir); len(names) == 2 && len(ids) == 2 && ids[0] >= 5 {
			settled = true
			break
		}
	}
	if !r.kill() {
		t.Fatal("the second run ended before it could be killed")
	}
	if !settled {
		t.Errorf("the job folder never held only the 2 retained chk folders; last %v", names)
	}
}
