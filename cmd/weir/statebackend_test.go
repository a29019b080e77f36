package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStateBackendFlag runs the demo with --state-backend lsm and a
// failure injected: it must verify, and the LSM stores must be gone from
// state.backend.lsm.dir afterwards. Then an lsm run killed mid-way is
// resumed with Flink's spelling of the heap backend, which must restore
// the lsm checkpoint and verify. (A run that finished leaves no checkpoint
// to resume.)
func TestStateBackendFlag(t *testing.T) {
	dir := t.TempDir()
	lsmDir := filepath.Join(dir, "lsm")
	state := filepath.Join(dir, "state")
	res := runWeir(t, time.Minute, "run", "demo", "--events", "30000", "-p", "2", "--checkpoint-interval", "20ms",
		"--state-backend", "lsm", "-D", "state.backend.lsm.dir="+lsmDir, "--inject-failures", "1", "--fault-seed", "3",
		"--state-dir", state, "--verify", "-q")
	wantExit(t, res, 0)
	if !strings.Contains(res.stderr, "verify: committed output equals") {
		t.Fatalf("no verification:\n%s", res.stderr)
	}
	if entries, err := os.ReadDir(lsmDir); err != nil || len(entries) != 0 {
		t.Fatalf("state.backend.lsm.dir after the run: %v, %v; want it empty", entries, err)
	}
	state2 := filepath.Join(dir, "state2")
	killMidRun(t, []string{"run", "demo", "--events", "30000", "--rate", "10000", "-p", "2", "--checkpoint-interval", "20ms",
		"--state-backend", "lsm", "-D", "state.backend.lsm.dir=" + lsmDir, "--state-dir", state2, "-q"}, filepath.Join(state2, "demo"), 2)
	res = runWeir(t, time.Minute, "run", "demo", "--events", "30000", "-p", "3", "-D", "state.backend.type=hashmap",
		"--state-dir", state2, "--verify", "-q", "-v")
	wantExit(t, res, 0)
	if !strings.Contains(res.stderr, "msg=restoring") {
		t.Fatalf("the heap run did not restore the lsm run's checkpoint:\n%s", res.stderr)
	}
}
