package demo_test

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/testutil"
	"github.com/weirstream/weir/internal/vfs"
	"github.com/weirstream/weir/internal/vfs/s3fs/s3test"
)

// s3Run is a demo run whose checkpoints go to an in-process S3 server.
func s3Run(t *testing.T, srv *s3test.Server, n, k int64, p int) *run {
	t.Helper()
	r := newRun(t, n, k, p)
	r.stateDir = fmt.Sprintf("s3://ckpt/%s", strings.ReplaceAll(t.Name(), "/", "-"))
	r.extra = srv.Settings()
	return r
}

// The exactly-once test of the demo, with checkpoint storage on S3:
// failures injected at every fault point, output compared exactly with the
// failure-free run, and retention leaving no more than num-retained
// completed checkpoints in the bucket.
func TestExactlyOnceUnderFaultsOnS3(t *testing.T) {
	const (
		n        = 150_000
		k        = 97
		failures = 4
	)
	srv := s3test.Start(t, "ckpt")
	want := demo.Expected(n, k)
	for p := 1; p <= 3; p++ {
		t.Run(fmt.Sprintf("all/p%d", p), func(t *testing.T) {
			r := s3Run(t, srv, n, k, p)
			r.rate = 1_000_000
			r.plan = faultPlan(failures, int64(31*p), n, faults.AllPoints()...)
			res := r.execute(t, context.Background(), nil)
			if res.err != nil {
				t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
			}
			if got := res.inj.Fired(); got != failures {
				t.Errorf("%d of %d failures fired: %v", got, failures, res.inj.Log())
			}
			if res.restarts != failures {
				t.Errorf("restarts = %d, want %d", res.restarts, failures)
			}
			if res.readErr != nil {
				t.Fatal(res.readErr)
			}
			if d := demo.Diff(want, res.lines); d != "" {
				t.Fatalf("committed output differs from the failure-free run: %s", d)
			}
			restored := strings.Count(res.log.String(), "msg=restoring")
			if !strings.Contains(res.log.String(), "path=s3://ckpt/") && restored > 0 {
				t.Errorf("restores are not reported with their s3:// location:\n%s", res.log)
			}
			// Retention ran on S3: at most the 3 retained checkpoints are
			// complete, and nothing older is left.
			chks := completedOnS3(t, srv, r.stateDir+"/demo")
			if len(chks) == 0 || len(chks) > 3 {
				t.Errorf("completed checkpoints left in the bucket: %v; want 1 to 3", chks)
			}
			t.Logf("%d lines exact, %d restarts (%d from a checkpoint), %d checkpoints completed, %v; retained %v",
				len(res.lines), res.restarts, restored, hooks.Plan(res.env).Status.CompletedCheckpoints.Load(), res.elapsed, chks)
		})
	}
}

// completedOnS3 lists the chk-<n> prefixes under jobURL holding _metadata.
func completedOnS3(t *testing.T, srv *s3test.Server, jobURL string) []string {
	t.Helper()
	fsys := srv.FS(t)
	root := "/" + strings.TrimPrefix(jobURL, "s3://")
	ents, err := fsys.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "chk-") {
			continue
		}
		if _, err := fsys.Stat(root + "/" + e.Name() + "/_metadata"); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// Uploads that fail (S3 refusing a state file) decline those checkpoints;
// with tolerable failures the job continues without a restart and its
// output is exact.
func TestS3WriteErrorDeclinesCheckpointAndJobContinues(t *testing.T) {
	srv := s3test.Start(t, "ckpt")
	r := s3Run(t, srv, 100_000, 100, 2)
	r.rate = 200_000
	r.extra[config.CheckpointingTolerableFailures] = "1000"
	var failed atomic.Int32
	fsys := vfs.WithErrors(srv.FS(t), vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpClose && strings.HasSuffix(path, ".keyed") && failed.Add(1) <= 6 {
			return fs.ErrPermission
		}
		return nil
	}))
	env := weir.NewEnv(weir.WithConfig(r.config(t)))
	hooks.Plan(env).CheckpointFS = fsys
	demo.Build(env, demo.Options{Events: r.n, Keys: r.k, Rate: r.rate, Out: r.out})
	if err := env.Execute(context.Background(), "demo"); err != nil {
		t.Fatal(err)
	}
	st := hooks.Plan(env).Status
	if st.Restarts.Load() != 0 {
		t.Fatalf("%d restarts; a failed checkpoint upload must not fail the job", st.Restarts.Load())
	}
	if st.FailedCheckpoints.Load() == 0 {
		t.Fatal("no checkpoint failed although keyed state uploads failed")
	}
	lines, err := file.ReadCommitted(r.out)
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(r.n, r.k), lines); d != "" {
		t.Fatal(d)
	}
}

// A job whose S3 storage cannot work fails at start-up with a message
// naming the problem, before any task runs.
func TestS3StorageProblemsFailAtStart(t *testing.T) {
	srv := s3test.Start(t, "ckpt")
	for _, tc := range []struct {
		name, dir string
		set       map[string]string
		want      string
	}{
		{"missing bucket", "s3://nobucket/x", nil, `bucket "nobucket" does not exist`},
		{"bad credentials", "s3://ckpt/x", map[string]string{config.S3AccessKey: "wrong"}, "InvalidAccessKeyId"},
		{"bad scheme", "hdfs://nn/x", nil, `scheme "hdfs" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s3Run(t, srv, 1000, 10, 1)
			r.stateDir = tc.dir
			for k, v := range tc.set {
				r.extra[k] = v
			}
			env := weir.NewEnv(weir.WithConfig(r.config(t)))
			demo.Build(env, demo.Options{Events: r.n, Keys: r.k, Out: r.out})
			err := env.Execute(context.Background(), "demo")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A job on S3 storage stops with a savepoint written to S3 and reported by
// its s3:// location (a local target is refused, with the fix); a run in a
// fresh S3 folder resumes from that location at another parallelism, and
// the committed output is exact.
func TestStopWithSavepointOnS3AndResume(t *testing.T) {
	const n, k = 40_000, 43
	srv := s3test.Start(t, "ckpt")
	r := s3Run(t, srv, n, k, 2)
	r.rate = 25_000 // 1.6 s: the job must outlast two checkpoints and a savepoint, however fast the engine
	var stopped string
	first := r.execute(t, context.Background(), func(env *weir.Env) {
		st := hooks.Plan(env).Status
		ctl := hooks.Plan(env).Control
		waitFor(t, func() bool { return st.CompletedCheckpoints.Load() >= 2 })
		if _, err := ctl.TriggerSavepoint(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "s3://bucket/savepoints") {
			t.Errorf("a local savepoint target for S3 storage: %v", err)
		}
		var err error
		if stopped, err = ctl.StopWithSavepoint(context.Background(), "s3://ckpt/savepoints"); err != nil {
			t.Errorf("stop with savepoint: %v", err)
		}
	})
	if first.err != nil {
		t.Fatalf("stopped run: %v", first.err)
	}
	if !strings.HasPrefix(stopped, "s3://ckpt/savepoints/savepoint-demo-") {
		t.Fatalf("savepoint location %q; want s3://ckpt/savepoints/savepoint-demo-<n>", stopped)
	}
	if len(first.lines) >= n {
		t.Fatalf("the first run committed all %d lines before it was stopped; lower the rate", n)
	}
	r2 := *r
	r2.parallelism, r2.rate = 3, 0
	r2.stateDir += "-resumed"
	env := weir.NewEnv(weir.WithConfig(r2.config(t)))
	hooks.Plan(env).FromPath = stopped
	log, _ := testutil.Observe(env, nil)
	demo.Build(env, demo.Options{Events: n, Keys: k, Out: r.out})
	if err := env.Execute(context.Background(), "demo"); err != nil {
		t.Fatalf("resume from %s: %v", stopped, err)
	}
	if !strings.Contains(log.String(), "path="+stopped) {
		t.Fatalf("the run did not report restoring from %s:\n%s", stopped, log)
	}
	lines, err := file.ReadCommitted(r.out)
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(n, k), lines); d != "" {
		t.Fatal(d)
	}
}
