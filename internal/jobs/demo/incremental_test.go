package demo_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/testutil"
	"github.com/weirstream/weir/internal/vfs"
	"github.com/weirstream/weir/internal/vfs/s3fs/s3test"
)

// incremental is the configuration of the LSM backend with incremental
// checkpoints.
func incremental() map[string]string {
	return map[string]string{config.StateBackendType: "lsm", config.StateBackendIncremental: "true"}
}

// TestExactlyOnceUnderFaultsLSMIncremental: the exactly-once test with
// incremental checkpoints: every restore downloads a store's files and
// opens it; each checkpoint uploads only the SSTs flushed since the last.
func TestExactlyOnceUnderFaultsLSMIncremental(t *testing.T) {
	exactlyOnceUnderFaults(t, incremental())
}

// TestExactlyOnceUnderFaultsLSMIncrementalLocalRecovery: the same with
// local recovery, restarted tasks linking their last completed
// checkpoint's files instead of downloading them.
func TestExactlyOnceUnderFaultsLSMIncrementalLocalRecovery(t *testing.T) {
	extra := incremental()
	extra[config.StateBackendLocalRecovery] = "true"
	extra[config.StateBackendLSMDir] = t.TempDir()
	exactlyOnceUnderFaults(t, extra)
}

// TestExactlyOnceUnderFaultsLSMIncrementalOnS3: incremental checkpoints
// with the shared area on S3.
func TestExactlyOnceUnderFaultsLSMIncrementalOnS3(t *testing.T) {
	const n, k, failures = 150_000, 97, 4
	srv := s3test.Start(t, "ckpt")
	for p := 2; p <= 3; p++ {
		t.Run(fmt.Sprintf("all/p%d", p), func(t *testing.T) {
			r := s3Run(t, srv, n, k, p)
			for key, v := range incremental() {
				r.extra[key] = v
			}
			r.rate = 1_000_000
			r.plan = faultPlan(failures, int64(43*p), n, faults.AllPoints()...)
			res := r.execute(t, context.Background(), nil)
			if res.err != nil {
				t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
			}
			if res.restarts != failures || res.readErr != nil {
				t.Fatalf("restarts = %d (want %d), read: %v", res.restarts, failures, res.readErr)
			}
			if d := demo.Diff(demo.Expected(n, k), res.lines); d != "" {
				t.Fatalf("committed output differs from the failure-free run: %s", d)
			}
			if !strings.Contains(res.log.String(), "restored lsm store from incremental checkpoint") {
				t.Error("no task restored from an incremental checkpoint")
			}
		})
	}
}

// TestRescaleOnRestoreLSMIncremental rescales 2->3 and 3->2 from an
// incremental checkpoint: stores merged by ingestion, cut by range deletes.
func TestRescaleOnRestoreLSMIncremental(t *testing.T) {
	// Slower than the canonical case: each incremental checkpoint flushes
	// and syncs files, and three must complete before the first run ends.
	rescaleCases(t, "lsm", "lsm", incremental(), 20_000, []struct{ from, to int }{{2, 3}, {3, 2}})
}

// TestIncrementalRetentionGC runs many checkpoints with num-retained 3 and
// failures, then requires the shared area to hold exactly the files the 3
// retained checkpoints reference.
func TestIncrementalRetentionGC(t *testing.T) {
	const n, k = 200_000, 97
	r := newRun(t, n, k, 2)
	r.extra = incremental()
	r.extra[config.CheckpointsNumRetained] = "3"
	r.rate = 100_000 // about 2 s: many checkpoints
	r.plan = faultPlan(2, 5, n, faults.SnapshotAsync, faults.Commit)
	res := r.execute(t, context.Background(), nil)
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	if d := demo.Diff(demo.Expected(n, k), res.lines); d != "" {
		t.Fatal(d)
	}
	if c := hooks.Plan(res.env).Status.CompletedCheckpoints.Load(); c < 10 {
		t.Fatalf("only %d checkpoints completed; the test needs many", c)
	}
	jobDir := filepath.Join(r.stateDir, "demo")
	chks := completedCheckpoints(t, jobDir)
	if len(chks) != 3 {
		t.Fatalf("%d checkpoints retained, want 3: %v", len(chks), chks)
	}
	checkSharedAreaExact(t, jobDir, chks)
}

// checkSharedAreaExact compares the shared area with the files the
// retained checkpoints reference.
func checkSharedAreaExact(t *testing.T, jobDir string, chks []string) {
	t.Helper()
	for _, c := range chks {
		md, _, err := storage.LoadPath(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if len(md.SharedRefs()) == 0 && md.Kind == checkpoint.Periodic {
			t.Fatalf("%s references no shared file; is it incremental?", c)
		}
	}
	d, err := testutil.SharedAreaDiff(jobDir, chks)
	if err != nil {
		t.Fatal(err)
	}
	if d != "" {
		t.Fatal(d)
	}
}

// TestIncrementalDiskFullDeclinesCheckpoint: uploads to the shared area
// that hit a full disk decline their checkpoints; the job goes on without
// a restart, its output is exact, and no failed upload stays behind.
func TestIncrementalDiskFullDeclinesCheckpoint(t *testing.T) {
	r := newRun(t, 100_000, 100, 2)
	r.rate = 200_000
	r.extra = incremental()
	r.extra[config.CheckpointingTolerableFailures] = "1000"
	shared := string(filepath.Separator) + "shared" + string(filepath.Separator)
	runDiskFull(t, r, "shared uploads", func(op vfs.Op, path string) bool {
		return op == vfs.OpWrite && strings.Contains(path, shared)
	})
	jobDir := filepath.Join(r.stateDir, "demo")
	checkSharedAreaExact(t, jobDir, completedCheckpoints(t, jobDir))
}

// TestIncrementalCorruptSharedFileFallsBack corrupts a shared file that
// only the newest checkpoint references: the restore detects it by its
// checksum, names it, and falls back to the checkpoint before, whose
// restore is exact (parallelism 1, the newest checkpoint's transaction
// never committed; see TestRestoreSkipsCorruptUncommittedCheckpoint).
func TestIncrementalCorruptSharedFileFallsBack(t *testing.T) {
	const n, k = 40_000, 41
	r := newRun(t, n, k, 1)
	r.extra = incremental()
	// Slower than the canonical test: incremental checkpoints flush and
	// sync, and two must complete before the commit failure.
	r.rate = 50_000
	r.restart = map[string]string{config.RestartStrategyType: config.RestartNone}
	r.plan = faultPlan(1, 3, n, faults.Commit)
	first := r.execute(t, context.Background(), nil)
	var jf *weir.JobFailedError
	if !errors.As(first.err, &jf) {
		t.Fatalf("first run: Execute = %v, want a JobFailedError", first.err)
	}
	jobDir := filepath.Join(r.stateDir, "demo")
	chks := completedCheckpoints(t, jobDir)
	if len(chks) < 2 {
		t.Fatalf("want at least 2 retained checkpoints, have %v", chks)
	}
	newest, prev := chks[len(chks)-1], chks[len(chks)-2]
	mdNew, _, err := storage.LoadPath(context.Background(), newest)
	if err != nil {
		t.Fatal(err)
	}
	mdPrev, _, err := storage.LoadPath(context.Background(), prev)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, r := range mdPrev.SharedRefs() {
		old[r.Name] = true
	}
	victim := ""
	for _, r := range mdNew.SharedRefs() {
		if !old[r.Name] && r.Size > 0 {
			victim = r.Name
		}
	}
	if victim == "" {
		t.Fatalf("every shared file of %s is also %s's; change the plan's seed", newest, prev)
	}
	corrupt(t, filepath.Join(jobDir, checkpoint.SharedDir, victim))

	r.rate, r.plan, r.restart = 0, nil, nil
	second := r.execute(t, context.Background(), nil)
	if second.err != nil {
		t.Fatalf("second run: %v\nlog:\n%s", second.err, second.log)
	}
	checkSkipLogged(t, second.log.String(), newest, prev)
	if !strings.Contains(second.log.String(), victim) {
		t.Errorf("the log does not name the corrupt shared file %s", victim)
	}
	if d := demo.Diff(demo.Expected(n, k), second.lines); d != "" {
		t.Fatalf("output after falling back differs from the failure-free run: %s", d)
	}
}
