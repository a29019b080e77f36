package demo_test

import (
	"context"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/testutil"
	"github.com/weirstream/weir/internal/vfs"
)

// A disk that is full while some keyed state files are written declines
// those checkpoints; with tolerable failures the job keeps running without
// a restart and its output is still exact.
func TestDiskFullDeclinesCheckpointAndJobContinues(t *testing.T) {
	r := newRun(t, 100_000, 100, 2)
	r.rate = 200_000 // long enough for several checkpoints
	r.extra = map[string]string{config.CheckpointingTolerableFailures: "1000"}
	runDiskFull(t, r, "keyed state writes", func(op vfs.Op, path string) bool {
		return op == vfs.OpCreate && strings.HasSuffix(path, ".keyed")
	})
}

// runDiskFull runs the demo job with a checkpoint filesystem that fails the
// first 6 operations full matches with ENOSPC, and asserts that those
// checkpoints were declined while the job went on without a restart and
// committed exactly the failure-free output.
func runDiskFull(t *testing.T, r *run, what string, full func(op vfs.Op, path string) bool) {
	t.Helper()
	cfg := r.config(t)
	var failed atomic.Int32
	fs := vfs.WithErrors(vfs.OS{}, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if full(op, path) && failed.Add(1) <= 6 {
			return syscall.ENOSPC
		}
		return nil
	}))
	env := weir.NewEnv(weir.WithConfig(cfg))
	hooks.Plan(env).CheckpointFS = fs
	testutil.KeepFinishedCheckpoints(env) // callers check what was retained
	demo.Build(env, demo.Options{Events: r.n, Keys: r.k, Rate: r.rate, Out: r.out})
	if err := env.Execute(context.Background(), "demo"); err != nil {
		t.Fatal(err)
	}
	st := hooks.Plan(env).Status
	if st.Restarts.Load() != 0 {
		t.Fatalf("%d restarts; a failed checkpoint write must not fail the job", st.Restarts.Load())
	}
	if st.FailedCheckpoints.Load() == 0 {
		t.Fatalf("no checkpoint failed although %s hit a full disk", what)
	}
	lines, err := file.ReadCommitted(r.out)
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(r.n, r.k), lines); d != "" {
		t.Fatal(d)
	}
}
