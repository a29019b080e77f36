package demo_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/jobstatus"
)

// TestWeakConsistentUnderFaults runs the demo in WEAKLY_CONSISTENT mode
// with failures at every fault point, in source, keyed and sink tasks.
// Each failure restarts one task from its own snapshot; producers replay
// from their in-flight logs and a restarted producer's output that its log
// holds already is dropped, so with logs large enough the committed lines
// must equal the failure-free run exactly, and the accounting must say
// nothing was lost or duplicated.
func TestWeakConsistentUnderFaults(t *testing.T) {
	const n, k = 60_000, 53
	want := demo.Expected(n, k)
	for p := 1; p <= 3; p++ {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			r := newRun(t, n, k, p)
			r.extra = map[string]string{config.CheckpointingMode: config.ModeWeak}
			r.plan = faultPlan(6, int64(300+p), n, faults.AllPoints()...)
			runWeakExact(t, r, want)
		})
	}
}

// TestWeakConsistentSmallLogCountsLoss forces the in-flight logs far
// below what a restarted task needs replayed: records are then lost, and
// the accounting must count exactly the events whose line is missing
// from the committed output (and nothing may be duplicated). Failures
// while a task processes a record land in sources as often as not, and
// a restarted source loses nothing; each run's plan (fixed by its seed)
// also fails the sink after it pre-committed a snapshot, so it restarts
// from the one before, further back than a 100-record log reaches.
func TestWeakConsistentSmallLogCountsLoss(t *testing.T) {
	const n, k = 60_000, 53
	var lostInAll int64
	defer func() {
		if !t.Failed() && lostInAll == 0 {
			t.Errorf("no run lost a record: the test exercised no loss; make the failures land where the logs fall short")
		}
	}()
	for p := 1; p <= 3; p++ {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			r := newRun(t, n, k, p)
			r.interval = "50ms"
			r.extra = map[string]string{
				config.CheckpointingMode:         config.ModeWeak,
				config.WeakInFlightLogMaxRecords: "100",
			}
			r.plan = faultPlan(4, int64(500+p), n, faults.Process, faults.AfterPreCommit)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res := r.execute(t, ctx, nil)
			if res.err != nil {
				t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
			}
			if res.readErr != nil {
				t.Fatal(res.readErr)
			}
			w := &hooks.Plan(res.env).Status.Weak
			missing, dup := demo.MissingDuplicated(n, res.lines)
			t.Logf("weak failover: %d failures, %d task restarts, %d replayed, %d lost, %d duplicated; measured %d missing, %d duplicated lines",
				w.Failures.Load(), w.TaskRestarts.Load(), w.Replayed.Load(), w.Lost.Load(), w.Duplicated.Load(), missing, dup)
			if missing != w.Lost.Load() || dup != w.Duplicated.Load() {
				t.Fatalf("measured %d missing and %d duplicated lines, the accounting says %d lost and %d duplicated", missing, dup, w.Lost.Load(), w.Duplicated.Load())
			}
			lostInAll += missing
			if res.inj.Fired() > 0 && missing == 0 {
				t.Logf("no record lost: the failures hit tasks whose logs still held what they needed")
			}
		})
	}
}

// TestWeakConsistentAcrossTaskManagers runs the weak demo on 2 and 3
// TaskManagers, each with its own data plane (subtask i on TaskManager i
// mod n), so the keyed exchange crosses TCP: a restarted consumer's
// partition request asks the producer's TaskManager for the replay from
// its snapshot's position, and its completed snapshots release the remote
// logs. Failures at every fault point must leave the committed output
// exactly the failure-free run's, with nothing counted lost or duplicated.
func TestWeakConsistentAcrossTaskManagers(t *testing.T) {
	const n, k = 60_000, 97
	want := demo.Expected(n, k)
	for _, c := range []struct{ p, tms int }{{2, 2}, {3, 3}, {4, 3}} {
		t.Run(fmt.Sprintf("p%d/tm%d", c.p, c.tms), func(t *testing.T) {
			r := newRun(t, n, k, c.p)
			r.extra = map[string]string{
				config.CheckpointingMode: config.ModeWeak,
				config.LocalTaskManagers: fmt.Sprint(c.tms),
			}
			r.plan = faultPlan(6, int64(700+10*c.p+c.tms), n, faults.AllPoints()...)
			st := runWeakExact(t, r, want)
			t.Logf("%d bytes crossed TCP", st.RemoteBytesSent.Load())
			if st.RemoteBytesSent.Load() == 0 {
				t.Errorf("no record crossed TCP between the %d TaskManagers", c.tms)
			}
		})
	}
}

// runWeakExact runs r in WEAKLY_CONSISTENT mode and requires what the mode
// promises while the logs cover every gap: the committed output equals
// the failure-free run exactly, nothing is counted lost or duplicated, and
// each failure restarted exactly one task. It returns the job's status.
func runWeakExact(t *testing.T, r *run, want []string) *jobstatus.JobStatus {
	t.Helper()
	// A stuck replay would hang the job: fail with its log instead.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := r.execute(t, ctx, nil)
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	if res.readErr != nil {
		t.Fatal(res.readErr)
	}
	st := hooks.Plan(res.env).Status
	w := &st.Weak
	t.Logf("weak failover: %d failures, %d task restarts, %d replayed, %d lost, %d duplicated (fired %d)",
		w.Failures.Load(), w.TaskRestarts.Load(), w.Replayed.Load(), w.Lost.Load(), w.Duplicated.Load(), res.inj.Fired())
	if d := demo.Diff(want, res.lines); d != "" {
		t.Fatalf("committed output differs from the failure-free run:\n%s\nlog:\n%s", d, res.log)
	}
	if w.Lost.Load() != 0 || w.Duplicated.Load() != 0 {
		t.Errorf("accounting says %d lost, %d duplicated; the output is exact", w.Lost.Load(), w.Duplicated.Load())
	}
	if res.inj.Fired() > 0 && w.TaskRestarts.Load() != w.Failures.Load() {
		t.Errorf("%d failures restarted %d tasks; each failure restarts exactly one", w.Failures.Load(), w.TaskRestarts.Load())
	}
	return st
}

// TestWeakConsistentResumeAfterCancels runs the weak demo, rate-limited,
// and cancels it three times once its tasks completed snapshots, then
// runs it to the end on the same state folder. Each run after the first
// restores every task from its own newest snapshot: the keyed tasks'
// sinks commit what their snapshots hold and abort the rest, the sources
// re-emit from their read positions, and the sources' output logs are
// rebuilt from what their snapshots stored, so a keyed task restored from
// an older snapshot than its sources' is replayed what it had not read.
// With logs that large nothing is lost, and the sources re-emit
// deterministically (the keyed tasks, which lost their determinants, have
// no output logs: they write into their sinks), so nothing is possibly
// duplicated either: the committed output must equal the failure-free
// run exactly and the accounting must say 0 lost, 0 duplicated.
//
// Each restored run counts each restored task as one failure and one task
// restart. Retention is per task: when the job finishes, its state folder
// holds exactly one snapshot per task (its final one), the restored ones
// and any older ones discarded.
func TestWeakConsistentResumeAfterCancels(t *testing.T) {
	for _, tms := range []int{1, 2} {
		t.Run(fmt.Sprintf("tm%d", tms), func(t *testing.T) { resumeAfterCancels(t, tms) })
	}
}

// resumeAfterCancels is TestWeakConsistentResumeAfterCancels on tms
// TaskManagers: with 2, the keyed exchange crosses TCP, and a restored
// keyed task asks its sources' TaskManagers for their rebuilt logs.
func resumeAfterCancels(t *testing.T, tms int) {
	const n, k, p = 60_000, 53, 2
	want := demo.Expected(n, k)
	r := newRun(t, n, k, p)
	r.rate = 40_000
	r.interval = "20ms"
	r.extra = map[string]string{config.CheckpointingMode: config.ModeWeak, config.LocalTaskManagers: fmt.Sprint(tms)}
	tasks := int64(2 * p) // p sources, p keyed aggregations chained to their sinks
	var res result
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		res = r.execute(t, ctx, func(env *weir.Env) {
			w := &hooks.Plan(env).Status.Weak
			st := hooks.Plan(env).Status
			// The tasks snapshot in turn, sources first: cancel once a
			// round's source snapshots completed and its keyed ones did
			// not yet, so that the keyed tasks restore older positions
			// than their sources' snapshots, and are replayed the rest
			// from the logs those stored (the same cancels without
			// stored logs lose records:
			// TestWeakConsistentResumeWithoutStoredLogs).
			waitFor(t, func() bool {
				c := w.SnapshotsCompleted.Load()
				return c >= 2*tasks && c%tasks == p || st.State() == jobstatus.StateFinished
			})
			cancel()
		})
		cancel()
		if i > 0 {
			checkRestored(t, res, &hooks.Plan(res.env).Status.Weak, tasks)
		}
		if res.err == nil {
			t.Logf("run %d finished before its cancel", i)
			break
		}
		if !errors.Is(res.err, context.Canceled) {
			t.Fatalf("run %d: Execute = %v, want context.Canceled\nlog:\n%s", i, res.err, res.log)
		}
		if missing, dup := demo.MissingDuplicated(n, res.lines); dup != 0 {
			t.Fatalf("after cancelled run %d: %d duplicated lines (%d not yet committed)", i, dup, missing)
		}
		t.Logf("run %d cancelled with %d lines committed", i, len(res.lines))
	}
	if res.err != nil {
		r.rate = 0
		res = r.execute(t, context.Background(), nil)
		if res.err != nil {
			t.Fatalf("final run: %v\nlog:\n%s", res.err, res.log)
		}
		checkRestored(t, res, &hooks.Plan(res.env).Status.Weak, tasks)
	}
	w := &hooks.Plan(res.env).Status.Weak
	if d := demo.Diff(want, res.lines); d != "" {
		t.Fatalf("committed output after the cancels differs from the failure-free run:\n%s\nlog:\n%s", d, res.log)
	}
	if w.Lost.Load() != 0 || w.Duplicated.Load() != 0 {
		t.Errorf("accounting says %d lost, %d duplicated; the output is exact", w.Lost.Load(), w.Duplicated.Load())
	}
	snaps, err := filepath.Glob(filepath.Join(r.stateDir, "demo", "chk-*"))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(snaps)) != tasks {
		t.Errorf("the finished job left %d task snapshots %v, want one per task (%d): retention is per task", len(snaps), snaps, tasks)
	}
	// A task snapshot that stores output logs records their record type.
	logs := 0
	for _, snap := range snaps {
		md, _, err := storage.LoadPath(t.Context(), snap)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range md.Operators {
			for _, st := range op.Subtasks {
				if st.State.Weak == nil || st.State.Weak.Logs == nil {
					continue
				}
				logs++
				if !slices.ContainsFunc(op.States, func(r checkpoint.StateSchema) bool { return r.Scope == checkpoint.ScopeWeakLog && r.Name == "out0" }) {
					t.Errorf("%s: operator %q stores output logs but its state table has no weak-log row: %+v", snap, op.UID, op.States)
				}
			}
		}
	}
	if logs == 0 {
		t.Errorf("no task snapshot stored output logs: the check above checked nothing")
	}
}

// checkRestored requires that a run restored every task from its own
// snapshot: each counts as one failure and one restart, and the log says
// so.
func checkRestored(t *testing.T, res result, w *jobstatus.WeakStats, tasks int64) {
	t.Helper()
	if !strings.Contains(res.log.String(), fmt.Sprintf(`msg="restoring each task from its own newest snapshot" tasks=%d`, tasks)) {
		t.Fatalf("the run did not restore all %d tasks from their snapshots:\n%s", tasks, res.log)
	}
	if w.TaskRestarts.Load() < tasks || w.Failures.Load() < tasks {
		t.Errorf("a restored run counted %d failures, %d task restarts; want at least one each per task (%d)", w.Failures.Load(), w.TaskRestarts.Load(), tasks)
	}
}

// TestWeakConsistentResumeWithoutStoredLogs: with the output logs not
// stored (execution.checkpointing.weak.in-flight-log.snapshot: false), a
// whole-job restart cannot replay what only the killed process's logs
// held. The rerun counts it: a keyed task restored from an older
// snapshot than its source's loses the records in between, and the
// records the restored run counts lost must be exactly the events whose
// line is missing from the final output, with nothing duplicated (the
// first run, cancelled once its tasks snapshotted, had no failure and
// lost nothing).
func TestWeakConsistentResumeWithoutStoredLogs(t *testing.T) {
	const n, k = 60_000, 53
	var lostInAll int64
	defer func() {
		if !t.Failed() && lostInAll == 0 {
			t.Errorf("no run lost a record: the test exercised no loss; cancel where keyed tasks' snapshots lag their sources'")
		}
	}()
	for p := 1; p <= 3; p++ {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			r := newRun(t, n, k, p)
			r.rate = 40_000
			r.interval = "40ms"
			r.extra = map[string]string{config.CheckpointingMode: config.ModeWeak, config.WeakInFlightLogSnapshot: "false"}
			tasks := int64(2 * p)
			ctx, cancel := context.WithCancel(context.Background())
			res := r.execute(t, ctx, func(env *weir.Env) {
				w := &hooks.Plan(env).Status.Weak
				st := hooks.Plan(env).Status
				// The tasks snapshot in turn, sources first: cancel once
				// a round's source snapshots completed and its keyed
				// ones did not yet, so that the keyed tasks restore
				// older positions than their sources' snapshots hold.
				waitFor(t, func() bool {
					c := w.SnapshotsCompleted.Load()
					return c >= 2*tasks && c%tasks == int64(p) || st.State() == jobstatus.StateFinished
				})
				cancel()
			})
			cancel()
			if res.err == nil {
				t.Logf("the first run finished before its cancel: nothing to restore")
				return
			}
			if !errors.Is(res.err, context.Canceled) {
				t.Fatalf("run 0: Execute = %v, want context.Canceled\nlog:\n%s", res.err, res.log)
			}
			if w := &hooks.Plan(res.env).Status.Weak; w.Lost.Load() != 0 || w.Duplicated.Load() != 0 {
				t.Fatalf("the run without failures counted %d lost, %d duplicated", w.Lost.Load(), w.Duplicated.Load())
			}
			r.rate = 0
			res = r.execute(t, context.Background(), nil)
			if res.err != nil {
				t.Fatalf("final run: %v\nlog:\n%s", res.err, res.log)
			}
			w := &hooks.Plan(res.env).Status.Weak
			checkRestored(t, res, w, tasks)
			missing, dup := demo.MissingDuplicated(n, res.lines)
			t.Logf("restored run: %d lost, %d duplicated; measured %d missing, %d duplicated lines", w.Lost.Load(), w.Duplicated.Load(), missing, dup)
			if missing != w.Lost.Load() || dup != 0 || w.Duplicated.Load() != 0 {
				t.Fatalf("measured %d missing and %d duplicated lines, the accounting says %d lost and %d duplicated", missing, dup, w.Lost.Load(), w.Duplicated.Load())
			}
			lostInAll += missing
		})
	}
}

// TestWeakConsistentResumeSkipsCorruptSnapshot damages the stored output
// logs of every source task's snapshot after a cancelled run: the next
// run skips each of those snapshots, saying why, and restores the other
// tasks from theirs; the sources, left without a snapshot (each task's
// older ones were discarded as it snapshotted), start from scratch, and
// their logs take their numbering from the keyed tasks' positions, so
// what the sources emit again up to there is skipped as already sent.
// The sources emit deterministically, so the output is still exact and
// nothing is counted lost or duplicated.
func TestWeakConsistentResumeSkipsCorruptSnapshot(t *testing.T) {
	const n, k, p = 60_000, 53, 2
	r, res := cancelledWeakRun(t, n, k, p)
	logs, err := filepath.Glob(filepath.Join(r.stateDir, "demo", "chk-*", "*weaklog*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != p {
		t.Fatalf("found the stored output logs %v, want one per source subtask (%d)", logs, p)
	}
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff // same size, wrong checksum
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.rate = 0
	res = r.execute(t, context.Background(), nil)
	if res.err != nil {
		t.Fatalf("run after the damage: %v\nlog:\n%s", res.err, res.log)
	}
	if got := strings.Count(res.log.String(), "skipping unusable task snapshot"); got != p {
		t.Errorf("the run skipped %d task snapshots, want the %d damaged ones:\n%s", got, p, res.log)
	}
	for _, f := range logs {
		// The reason names the damaged file and what is wrong with it.
		if want := filepath.Base(f) + ": checkpoint data corrupt: checksum mismatch"; !strings.Contains(res.log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, res.log)
		}
	}
	w := &hooks.Plan(res.env).Status.Weak
	checkRestored(t, res, w, p) // the keyed tasks only
	if d := demo.Diff(demo.Expected(n, k), res.lines); d != "" {
		t.Fatalf("committed output differs from the failure-free run:\n%s\nlog:\n%s", d, res.log)
	}
	if w.Lost.Load() != 0 || w.Duplicated.Load() != 0 {
		t.Errorf("accounting says %d lost, %d duplicated; the output is exact", w.Lost.Load(), w.Duplicated.Load())
	}
}

// TestWeakConsistentResumeRefusesSinkWithoutSnapshot removes every
// snapshot of one keyed task (its sink chained in) after a cancelled run
// whose sinks committed output: the next run would start that task from
// scratch and commit its earlier output a second time, so its file sink
// refuses, naming its subtask and the way out, and the job fails without
// a restart. Subtask 1's committed files stay as they were. Subtask 0
// restored its snapshot and may commit on its own snapshot before
// subtask 1 opens (WEAKLY_CONSISTENT commits per task), so the folder may
// gain subtask 0's continuation, but never a line twice: the output stays
// a sub-multiset of the failure-free run's and keeps every earlier line.
func TestWeakConsistentResumeRefusesSinkWithoutSnapshot(t *testing.T) {
	const n, k, p = 60_000, 53, 2
	r, res := cancelledWeakRun(t, n, k, p)
	before := res.lines
	snaps, err := filepath.Glob(filepath.Join(r.stateDir, "demo", "chk-*", "aggregate-*-1.keyed"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no snapshot of keyed subtask 1 (%v): the test needs one", err)
	}
	for _, f := range snaps {
		if err := os.RemoveAll(filepath.Dir(f)); err != nil {
			t.Fatal(err)
		}
	}
	sub1 := subtaskParts(t, r.out, 1)
	res = r.execute(t, context.Background(), nil)
	want := "already holds committed output of its subtask 1 from an earlier run"
	if res.err == nil || !strings.Contains(res.err.Error(), want) {
		t.Fatalf("run without subtask 1's snapshots: %v, want the sink's refusal (%q)\nlog:\n%s", res.err, want, res.log)
	}
	if res.restarts != 0 {
		t.Errorf("%d restarts: no restart can change the folder", res.restarts)
	}
	if got := subtaskParts(t, r.out, 1); !maps.Equal(got, sub1) {
		t.Errorf("the refused run changed subtask 1's committed files: %v, were %v", got, sub1)
	}
	if d := demo.Excess(res.lines, before); d != "" {
		t.Errorf("the refused run lost committed output: %s", d)
	}
	if d := demo.Excess(demo.Expected(n, k), res.lines); d != "" {
		t.Errorf("the refused run committed a line twice or one a failure-free run would not: %s", d)
	}
}

// subtaskParts returns the committed part files of one sink subtask in
// dir with their sizes ("part-<uid>-<subtask>-<seq>").
func subtaskParts(t *testing.T, dir string, subtask int) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	parts := make(map[string]int64)
	for _, e := range entries {
		f := strings.Split(e.Name(), "-")
		if len(f) < 4 || f[0] != "part" || f[len(f)-2] != strconv.Itoa(subtask) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		parts[e.Name()] = fi.Size()
	}
	return parts
}

// cancelledWeakRun runs the demo (n events, k keys, p subtasks) in
// WEAKLY_CONSISTENT mode and cancels it once every task completed a few
// snapshots: the state folder for a test of what the next run restores.
// It skips the test if the run finished before its cancel.
func cancelledWeakRun(t *testing.T, n, k int64, p int) (*run, result) {
	t.Helper()
	r := newRun(t, n, k, p)
	r.rate = 40_000
	r.interval = "20ms"
	r.extra = map[string]string{config.CheckpointingMode: config.ModeWeak}
	ctx, cancel := context.WithCancel(context.Background())
	res := r.execute(t, ctx, func(env *weir.Env) {
		w := &hooks.Plan(env).Status.Weak
		st := hooks.Plan(env).Status
		waitFor(t, func() bool { return w.SnapshotsCompleted.Load() >= int64(4*p) || st.State() == jobstatus.StateFinished })
		cancel()
	})
	cancel()
	if res.err == nil {
		t.Skip("the first run finished before its cancel: nothing to restore")
	}
	return r, res
}
