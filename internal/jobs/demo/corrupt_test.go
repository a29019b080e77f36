package demo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestRestoreSkipsCorruptUncommittedCheckpoint makes the job fail for good
// right when the sink is about to commit the transaction of a completed
// checkpoint N (fault point commit, restart strategy none), flips bytes in
// chk-N's keyed state file, and runs the job again on the same state
// folder. The restore must skip chk-N, say so in the log naming its path,
// fall back to chk-(N-1), abort the transaction chk-N pre-committed (it was
// never committed, so its records are replayed) and finish with the exact
// failure-free output.
//
// Parallelism 1: with several sink subtasks, another subtask may already
// have committed its part of chk-N, and falling back past a committed
// transaction cannot be exact (see TestRestoreSkipsCorruptCommittedCheckpoint).
func TestRestoreSkipsCorruptUncommittedCheckpoint(t *testing.T) {
	const n, k = 40_000, 41
	r := newRun(t, n, k, 1)
	r.rate = 200_000 // events/s: several checkpoints complete before the failure
	r.restart = map[string]string{config.RestartStrategyType: config.RestartNone}
	r.plan = faultPlan(1, 3, n, faults.Commit)
	first := r.execute(t, context.Background(), nil)
	var jf *weir.JobFailedError
	if !errors.As(first.err, &jf) || !errors.Is(first.err, faults.ErrInjected) {
		t.Fatalf("first run: Execute = %v, want a JobFailedError from the injected commit failure", first.err)
	}
	jobDir := filepath.Join(r.stateDir, "demo")
	chks := completedCheckpoints(t, jobDir)
	if len(chks) < 2 {
		t.Fatalf("want at least 2 retained checkpoints before the commit failure, have %v; change the plan's seed", chks)
	}
	newest := chks[len(chks)-1]
	corrupt(t, keyedFile(t, newest))

	r.rate, r.plan, r.restart = 0, nil, nil
	second := r.execute(t, context.Background(), nil)
	if second.err != nil {
		t.Fatalf("second run: %v\nlog:\n%s", second.err, second.log)
	}
	checkSkipLogged(t, second.log.String(), newest, chks[len(chks)-2])
	if second.restarts != 0 {
		t.Errorf("second run restarted %d times", second.restarts)
	}
	if second.readErr != nil {
		t.Fatal(second.readErr)
	}
	if d := demo.Diff(demo.Expected(n, k), second.lines); d != "" {
		t.Fatalf("committed output after falling back from corrupt %s differs from the failure-free run: %s", filepath.Base(newest), d)
	}
	t.Logf("first run: %d lines committed, checkpoints %v, %v; second run exact in %v", len(first.lines), chks, first.inj.Log(), second.elapsed)
}

// TestRestoreSkipsCorruptCommittedCheckpoint is the case the brief asked
// for: a rate-limited run is cancelled after some checkpoints completed (so
// the sink committed their transactions), the newest checkpoint is
// corrupted, and the job runs again on the same folder.
//
// No restore can be exact here: the transactions chk-N committed hold the
// records after chk-(N-1), which a restore of chk-(N-1) replays. The run
// must fail at once (no restart can cure it) with an error that wraps
// weir.ErrAlreadyCommitted and names the checkpoint it tried, and it must
// leave the committed output as it was: a consistent prefix. (If the
// cancel came before the sink processed chk-N's notification, nothing of
// chk-N was committed and the fallback must instead be exact.)
func TestRestoreSkipsCorruptCommittedCheckpoint(t *testing.T) {
	const n, k = 30_000, 41
	r := newRun(t, n, k, 2)
	r.rate = 100_000 // events/s: the first run lasts long enough to cancel
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := r.execute(t, ctx, func(env *weir.Env) {
		waitFor(t, func() bool { return hooks.Plan(env).Status.CompletedCheckpoints.Load() >= 4 })
		cancel()
	})
	if first.err != context.Canceled {
		t.Fatalf("first run: Execute = %v, want context.Canceled", first.err)
	}
	if len(first.lines) >= n {
		t.Fatalf("first run committed all %d lines before it was cancelled; lower the rate", len(first.lines))
	}
	jobDir := filepath.Join(r.stateDir, "demo")
	chks := completedCheckpoints(t, jobDir)
	if len(chks) < 2 {
		t.Fatalf("want at least 2 retained checkpoints, have %v", chks)
	}
	newest := chks[len(chks)-1]
	corrupt(t, keyedFile(t, newest))

	r.rate = 0
	second := r.execute(t, context.Background(), nil)
	checkSkipLogged(t, second.log.String(), newest, chks[len(chks)-2])
	if second.restarts != 0 {
		t.Errorf("second run restarted %d times on a failure no restart can cure; last: %v", second.restarts, second.err)
	}
	if second.readErr != nil {
		t.Fatal(second.readErr)
	}
	if second.err == nil {
		if d := demo.Diff(demo.Expected(n, k), second.lines); d != "" {
			t.Fatalf("second run succeeded, but its output differs from the failure-free run: %s", d)
		}
		t.Logf("the cancel came before %s was committed; the fallback was exact", filepath.Base(newest))
		return
	}
	var jf *weir.JobFailedError
	if !errors.As(second.err, &jf) || !errors.Is(second.err, weir.ErrAlreadyCommitted) {
		t.Fatalf("second run: Execute = %v, want a JobFailedError wrapping weir.ErrAlreadyCommitted", second.err)
	}
	restored := strings.TrimPrefix(filepath.Base(chks[len(chks)-2]), "chk-")
	if !strings.Contains(second.err.Error(), "checkpoint "+restored) {
		t.Errorf("second run failed with %q, which does not name checkpoint %s", second.err, restored)
	}
	if msg := checkPrefix(demo.Expected(n, k), second.lines); msg != "" {
		t.Errorf("second run failed and left inconsistent output: %s", msg)
	}
	if len(second.lines) != len(first.lines) {
		t.Errorf("the refused restore changed the committed output: %d lines, %d before", len(second.lines), len(first.lines))
	}
}

// checkSkipLogged requires the log to report skipping the corrupt
// checkpoint by path and restoring the one before it.
func checkSkipLogged(t *testing.T, log, skipped, restored string) {
	t.Helper()
	found := false
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "skipping unusable checkpoint") && strings.Contains(l, skipped) {
			found = true
		}
	}
	if !found {
		t.Errorf("the log does not report skipping %s:\n%s", skipped, log)
	}
	if !strings.Contains(log, "msg=restoring") || !strings.Contains(log, "path="+restored) {
		t.Errorf("the log does not report restoring %s:\n%s", restored, log)
	}
}

// keyedFile returns the aggregate's keyed state file of subtask 0 in the
// checkpoint folder chk.
func keyedFile(t *testing.T, chk string) string {
	t.Helper()
	// The name carries a hash of the uid: aggregate-<hash>-0.keyed.
	m, err := filepath.Glob(filepath.Join(chk, "aggregate-*-0.keyed"))
	if err != nil || len(m) != 1 {
		t.Fatalf("want one keyed state file of aggregate subtask 0 in %s, found %v (%v)", chk, m, err)
	}
	return m[0]
}

// completedCheckpoints lists the chk-N folders of jobDir holding a
// _metadata file, oldest first.
func completedCheckpoints(t *testing.T, jobDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	type chk struct {
		id   int
		path string
	}
	var out []chk
	for _, e := range entries {
		var id int
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "chk-") {
			continue
		}
		if _, err := fmt.Sscanf(e.Name(), "chk-%d", &id); err != nil {
			continue
		}
		p := filepath.Join(jobDir, e.Name())
		if _, err := os.Stat(filepath.Join(p, "_metadata")); err == nil {
			out = append(out, chk{id, p})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	paths := make([]string, len(out))
	for i, c := range out {
		paths[i] = c.path
	}
	return paths
}

// corrupt flips every byte in the middle of the file, keeping its size.
func corrupt(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatalf("%s is empty", path)
	}
	for i := len(b) / 4; i < len(b)/4+max(len(b)/2, 1); i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
