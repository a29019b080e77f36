package rest_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/rest"
	"github.com/weirstream/weir/internal/testutil"
)

// Incremental checkpoints of the lsm backend over the API: each persists
// less than the state it references (the SSTs of earlier checkpoints stay
// shared), the history and the job's counters agree; a second run on the
// same state folder restores the newest checkpoint and reports when the
// restore began and how long it took. With local recovery, the cancelled
// run leaves its local copies behind for the next; the finished run
// removes them.
func TestIncrementalSizesAndRestore(t *testing.T) {
	const n, k, p = 40_000, 97, 2
	dir := t.TempDir()
	lsmDir := t.TempDir()
	extra := map[string]string{config.StateBackendType: "lsm", config.StateBackendIncremental: "true", config.StateBackendLSMDir: lsmDir,
		config.StateBackendLocalRecovery: "true"}
	local := filepath.Join(lsmDir, "weir-local-recovery", "demo")
	out := filepath.Join(dir, "out")
	newEnv := func(rate float64) (*weir.Env, *job, string, func()) {
		env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, p, filepath.Join(dir, "state"), "10ms", false, extra)))
		testutil.Observe(env, nil)
		demo.Build(env, demo.Options{Events: n, Keys: k, Rate: rate, Out: out})
		j := &job{id: "demo", name: "demo", status: hooks.Plan(env).Status, control: hooks.Plan(env).Control, cfg: hooks.Config(env.Config())}
		srv := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(j)}))
		return env, j, srv.URL + "/jobs/demo", srv.Close
	}

	// The first run is cancelled after a few checkpoints.
	env, j, url, stop := newEnv(50_000)
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- env.Execute(ctx, "demo") }()
	waitFor(t, "4 completed checkpoints", func() bool { return j.status.CompletedCheckpoints.Load() >= 4 })
	var stats rest.CheckpointingStatistics
	getJSON(t, url+"/checkpoints", &stats)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}
	if ents, err := os.ReadDir(local); err != nil || len(ents) != p {
		t.Errorf("local recovery folder %s after the cancelled run: %d entries (%v), want one per keyed subtask", local, len(ents), err)
	}
	smaller := 0
	for i, c := range stats.History {
		if c.Status != jobstatus.CheckpointCompleted {
			continue
		}
		if c.CheckpointedSize <= 0 || c.CheckpointedSize > c.StateSize {
			t.Errorf("history[%d] (checkpoint %d): checkpointed_size %d, state_size %d; want 0 < checkpointed <= state", i, c.ID, c.CheckpointedSize, c.StateSize)
		}
		if c.CheckpointedSize < c.StateSize {
			smaller++
		}
	}
	if smaller == 0 {
		t.Errorf("no incremental checkpoint persisted less than its state size: %+v", stats.History)
	}
	if l := stats.Latest.Completed; l == nil || l.CheckpointedSize > l.StateSize || l.StateSize <= 0 {
		t.Errorf("latest completed %+v", l)
	}
	if s := stats.Summary; s.CheckpointedSize.Max > s.StateSize.Max || s.CheckpointedSize.Avg >= s.StateSize.Avg {
		t.Errorf("summary: checkpointed %+v, state %+v; want checkpointed smaller on average", s.CheckpointedSize, s.StateSize)
	}

	// The second run restores the newest checkpoint and runs to the end.
	env2, j2, url2, stop2 := newEnv(0)
	defer stop2()
	before := time.Now()
	if err := env2.Execute(context.Background(), "demo"); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if lines, err := file.ReadCommitted(out); err != nil || demo.Diff(demo.Expected(n, k), lines) != "" {
		t.Fatalf("committed output differs from the demo's (err %v)", err)
	}
	if _, err := os.Stat(local); !os.IsNotExist(err) {
		t.Errorf("local recovery folder %s after the job finished: %v, want it removed", local, err)
	}
	st := j2.status
	if st.RestoredCheckpoint.Load() == 0 || st.LastRestoreDuration.Load() <= 0 || st.LastRestoreTimestamp.Load() < before.UnixMilli() {
		t.Fatalf("restored %d, restore duration %v, timestamp %d (run began %d)", st.RestoredCheckpoint.Load(),
			time.Duration(st.LastRestoreDuration.Load()), st.LastRestoreTimestamp.Load(), before.UnixMilli())
	}
	getJSON(t, url2+"/checkpoints", &stats)
	want := rest.RestoredCheckpoint{ID: st.RestoredCheckpoint.Load(), RestoreTimestamp: st.LastRestoreTimestamp.Load(),
		RestoreDuration: time.Duration(st.LastRestoreDuration.Load()).Milliseconds()}
	if r := stats.Latest.Restored; r == nil || *r != want {
		t.Errorf("latest restored %+v, want %+v", r, want)
	}
}
