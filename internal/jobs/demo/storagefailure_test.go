package demo_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/logagg"
	"github.com/weirstream/weir/internal/testutil"
	"github.com/weirstream/weir/internal/vfs"
	"github.com/weirstream/weir/internal/vfs/s3fs/s3test"
)

// Checkpoint storage that fails for a while (issue 17): with
// tolerable-failed-checkpoints at its default of 0 the job neither
// restarts nor spirals (fails a checkpoint, restarts, re-reads its input
// and fails the next checkpoint the same way, again and again;
// docs/guarantees.md). Checkpoints back off, an alert
// names the storage, warnings stay few, and once storage works again a
// checkpoint completes and the committed output is exactly the
// failure-free one.

// TestDiskFullForAPeriod makes every write to the checkpoint folder fail
// with ENOSPC from the second completed checkpoint until four checkpoints
// failed for it.
func TestDiskFullForAPeriod(t *testing.T) {
	r := newRun(t, 400_000, 100, 2)
	r.rate = 100_000
	r.interval = "100ms"
	var full atomic.Bool
	fsys := vfs.WithErrors(vfs.OS{}, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if full.Load() && (op == vfs.OpCreate || op == vfs.OpWrite || op == vfs.OpMkdirAll) {
			return syscall.ENOSPC
		}
		return nil
	}))
	runStorageOutage(t, r, fsys, full.Store)
}

// TestS3UnreachableForAPeriod drops every connection to the S3 server from
// the second completed checkpoint until four checkpoints failed for it.
func TestS3UnreachableForAPeriod(t *testing.T) {
	srv := s3test.Start(t, "ckpt")
	r := s3Run(t, srv, 400_000, 100, 2)
	r.rate = 100_000
	r.interval = "100ms"
	runStorageOutage(t, r, srv.FS(t), srv.SetDown)
}

// runStorageOutage runs the demo on fsys and calls fail(true) once two
// checkpoints completed, fail(false) once four failed for storage; it
// checks no restart, the alert and recovery lines, few warnings, a
// checkpoint completed after the outage, and the exact output.
func runStorageOutage(t *testing.T, r *run, fsys vfs.FS, fail func(bool)) {
	t.Helper()
	env := weir.NewEnv(weir.WithConfig(r.config(t)))
	log := &testutil.SyncBuffer{}
	agg := logagg.New(slog.NewTextHandler(log, nil), logagg.Options{})
	hooks.Plan(env).Logger = slog.New(agg)
	hooks.Plan(env).CheckpointFS = fsys
	testutil.KeepFinishedCheckpoints(env)
	demo.Build(env, demo.Options{Events: r.n, Keys: r.k, Rate: r.rate, Out: r.out})
	st := hooks.Plan(env).Status

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var before, recovered atomic.Int64 // completed checkpoints when the outage ended
	outage := make(chan string, 1)
	go func() {
		wait := func(what string, cond func() bool) bool {
			for !cond() {
				select {
				case <-ctx.Done():
					outage <- "the job ended before " + what
					return false
				case <-time.After(5 * time.Millisecond):
				}
			}
			return true
		}
		if !wait("two checkpoints completed", func() bool { return st.CompletedCheckpoints.Load() >= 2 }) {
			return
		}
		before.Store(st.CompletedCheckpoints.Load())
		fail(true)
		ok := wait("four checkpoints failed for storage", func() bool { return st.FailedStorage.Load() >= 4 })
		fail(false)
		recovered.Store(st.CompletedCheckpoints.Load())
		if ok {
			outage <- ""
		}
	}()
	err := env.Execute(ctx, "demo")
	cancel()
	agg.FlushAll(context.Background())
	if err != nil {
		t.Fatalf("job: %v\n%s", err, tail(log.String()))
	}
	if msg := <-outage; msg != "" {
		t.Fatalf("%s (completed %d, failed for storage %d): lengthen the run", msg, st.CompletedCheckpoints.Load(), st.FailedStorage.Load())
	}
	text := log.String()
	if n := st.Restarts.Load(); n > 0 {
		t.Errorf("%d restarts: a restart cannot fix storage\n%s", n, tail(text))
	}
	if st.CompletedCheckpoints.Load() <= recovered.Load() {
		t.Errorf("no checkpoint completed after storage came back (%d before the outage, %d at its end, %d at the job's end)",
			before.Load(), recovered.Load(), st.CompletedCheckpoints.Load())
	}
	if st.StorageFailing.Load() {
		t.Errorf("checkpointStorageFailing still set at the end")
	}
	for _, want := range []string{"checkpoint storage failing", "checkpoint storage works again"} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q:\n%s", want, tail(text))
		}
	}
	warns := strings.Count(text, "level=WARN")
	if testing.Verbose() {
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "level=WARN") || strings.Contains(l, "storage works") {
				t.Log(l)
			}
		}
	}
	t.Logf("%d checkpoints failed for storage, %d completed, %d warning lines", st.FailedStorage.Load(), st.CompletedCheckpoints.Load(), warns)
	if warns > 12 {
		t.Errorf("%d warning lines for one outage; want them aggregated (at most 12):\n%s", warns, tail(text))
	}
	lines, err := file.ReadCommitted(r.out)
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(r.n, r.k), lines); d != "" {
		t.Fatal(d)
	}
}

// tail returns the end of a log for a failure message.
func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}
