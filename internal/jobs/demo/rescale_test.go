package demo_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestRescaleOnRestore cancels a run after some checkpoints and resumes it
// from the newest one at another parallelism: keyed state is redistributed
// by key group, the datagen positions (union state) tell each new subtask
// which of its indexes the old owners had emitted, and the 2PC sink's
// pending transactions go to the subtasks that inherit them. The committed
// output must be exactly that of a run without rescaling, as the issue
// asks for 2->3, 3->2 and 4->1 (and 1->4).
func TestRescaleOnRestore(t *testing.T) { rescaleOnRestore(t, "heap", "heap") }

// TestRescaleOnRestoreLSM rescales checkpoints of the LSM backend.
func TestRescaleOnRestoreLSM(t *testing.T) { rescaleOnRestore(t, "lsm", "lsm") }

// TestRescaleAcrossBackends resumes a heap checkpoint with the LSM backend
// and an LSM checkpoint with the heap backend, rescaling at the same time:
// both write the same canonical format.
func TestRescaleAcrossBackends(t *testing.T) {
	t.Run("heap->lsm", func(t *testing.T) { rescaleOnRestore(t, "heap", "lsm") })
	t.Run("lsm->heap", func(t *testing.T) { rescaleOnRestore(t, "lsm", "heap") })
}

func rescaleOnRestore(t *testing.T, before, after string) {
	rate := 100_000.0
	if before == "lsm" {
		// With its write buffer the lsm backend keeps pace with 100k/s
		// even under -race: at 4 subtasks the first run then ended
		// before three checkpoints completed.
		rate = 30_000
	}
	rescaleCases(t, before, after, nil, rate, []struct{ from, to int }{{2, 3}, {3, 2}, {4, 1}, {1, 4}})
}

// rescaleCases runs the first run at rate events/s, slow enough for three
// checkpoints to complete before it ends.
func rescaleCases(t *testing.T, before, after string, extra map[string]string, rate float64, cases []struct{ from, to int }) {
	for _, c := range cases {
		t.Run(strings.Join([]string{itoa(c.from), itoa(c.to)}, "->"), func(t *testing.T) {
			const n, k = 30_000, 37
			r := newRun(t, n, k, c.from)
			lsmDir := t.TempDir()
			r.extra = map[string]string{"state.backend.type": before, "state.backend.lsm.dir": lsmDir}
			maps.Copy(r.extra, extra)
			r.rate = rate
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := r.execute(t, ctx, func(env *weir.Env) {
				waitFor(t, func() bool { return hooks.Plan(env).Status.CompletedCheckpoints.Load() >= 3 })
				// The keyed operator runs on the chosen backend: one store
				// per subtask while the job runs.
				if stores := lsmStores(t, lsmDir); before == "lsm" && stores != c.from || before == "heap" && stores != 0 {
					t.Errorf("%d lsm stores in %s while running on %s at parallelism %d", stores, lsmDir, before, c.from)
				}
				cancel()
			})
			if !errors.Is(first.err, context.Canceled) {
				t.Fatalf("first run: %v", first.err)
			}
			if len(first.lines) >= n {
				t.Fatalf("the first run committed all %d lines before it was cancelled; lower the rate", n)
			}
			r.rate, r.parallelism = 0, c.to
			r.extra = map[string]string{"state.backend.type": after, "state.backend.lsm.dir": lsmDir}
			maps.Copy(r.extra, extra)
			second := r.execute(t, context.Background(), nil)
			if second.err != nil {
				t.Fatalf("resume at parallelism %d: %v\nlog:\n%s", c.to, second.err, second.log)
			}
			if second.readErr != nil {
				t.Fatal(second.readErr)
			}
			if !strings.Contains(second.log.String(), "msg=restoring") {
				t.Fatal("the second run did not restore a checkpoint")
			}
			if d := demo.Diff(demo.Expected(n, k), second.lines); d != "" {
				t.Fatalf("resumed at parallelism %d: output differs from a run without rescaling: %s", c.to, d)
			}
			if n := lsmStores(t, lsmDir); n != 0 {
				t.Errorf("%d lsm stores left in %s after the job ended; tasks must remove them", n, lsmDir)
			}
			t.Logf("%d lines committed before the rescale, exact after", len(first.lines))
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// lsmStores counts the LSM backend's store folders in dir.
func lsmStores(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "weir-lsm-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}
