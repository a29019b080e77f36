package demo_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/jobstatus"
)

// TestStopWithSavepointAndRescale takes a savepoint of a running demo,
// then stops it with a final savepoint (the sinks commit what it covers),
// moves that savepoint folder elsewhere (savepoints are relocatable) and
// resumes from it at another parallelism in a fresh state folder: the
// committed output must be exactly the failure-free output.
func TestStopWithSavepointAndRescale(t *testing.T) {
	for _, c := range []struct{ from, to int }{{2, 3}, {3, 2}, {4, 1}} {
		t.Run(itoa(c.from)+"->"+itoa(c.to), func(t *testing.T) {
			const n, k = 40_000, 43
			r := newRun(t, n, k, c.from)
			r.rate = 25_000 // 1.6 s: the job must outlast two checkpoints and a savepoint, however fast the engine
			target := filepath.Join(t.TempDir(), "savepoints")
			var running, stopped string
			first := r.execute(t, context.Background(), func(env *weir.Env) {
				st := hooks.Plan(env).Status
				ctl := hooks.Plan(env).Control
				waitFor(t, func() bool { return st.CompletedCheckpoints.Load() >= 2 })
				var err error
				if running, err = ctl.TriggerSavepoint(context.Background(), target); err != nil {
					t.Errorf("savepoint: %v", err)
				}
				if stopped, err = ctl.StopWithSavepoint(context.Background(), target); err != nil {
					t.Errorf("stop with savepoint: %v", err)
				}
			})
			if first.err != nil {
				t.Fatalf("stopped run: %v", first.err)
			}
			if len(first.lines) >= n {
				t.Fatalf("the first run committed all %d lines before it was stopped; lower the rate", n)
			}
			if msg := checkPrefix(demo.Expected(n, k), first.lines); msg != "" {
				t.Fatalf("stopped run: %s", msg)
			}
			for _, p := range []string{running, stopped} {
				md, _, err := storage.LoadPath(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				if md.Kind != checkpoint.Savepoint || !strings.HasPrefix(filepath.Base(p), storage.SavepointPrefix) {
					t.Fatalf("%s: kind %v", p, md.Kind)
				}
			}
			// Relocate the savepoint: it must not depend on where it was written.
			moved := filepath.Join(t.TempDir(), "moved")
			if err := os.Rename(stopped, moved); err != nil {
				t.Fatal(err)
			}
			r2 := *r
			r2.parallelism, r2.rate = c.to, 0
			r2.stateDir = filepath.Join(t.TempDir(), "state2")
			env := weir.NewEnv(weir.WithConfig(r2.config(t)))
			hooks.Plan(env).FromPath = moved
			demo.Build(env, demo.Options{Events: n, Keys: k, Out: r.out})
			if err := env.Execute(context.Background(), "demo"); err != nil {
				t.Fatalf("resume from the savepoint at parallelism %d: %v", c.to, err)
			}
			if got := hooks.Plan(env).Status.State(); got != jobstatus.StateFinished {
				t.Fatalf("state %s", got)
			}
			second, err := file.ReadCommitted(r.out)
			if err != nil {
				t.Fatal(err)
			}
			if d := demo.Diff(demo.Expected(n, k), second); d != "" {
				t.Fatalf("resumed from a savepoint at parallelism %d: %s", c.to, d)
			}
		})
	}
}
