package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/testutil/fakejm"
)

// countJob is a small job for the tests: the demo's aggregation of
// --events generated events into the exactly-once file sink at --out;
// --fail-at N makes the job fail for good at event N.
func countJob() Job {
	return Job{
		Name:  "count",
		Short: "count events",
		Define: func(fs *pflag.FlagSet) Run {
			var (
				events, failAt int64
				out            string
			)
			fs.Int64Var(&events, "events", 1000, "events")
			fs.Int64Var(&failAt, "fail-at", -1, "fail at this event")
			fs.StringVar(&out, "out", "", "output folder")
			MarkPath(fs, "out")
			return Run{
				Configure: func(_ context.Context, cfg *weir.Config) error {
					if out == "" {
						return Usagef("--out is required")
					}
					return cfg.Set("restart-strategy.type", "none")
				},
				Build: func(env *weir.Env) error {
					evs := demo.Events(env, demo.Options{Events: events, Keys: 10})
					evs = weir.FlatMap(evs, func(e demo.Event, c *weir.Collector[demo.Event]) error {
						if e.I == failAt {
							return fmt.Errorf("event %d is poison", e.I)
						}
						c.Collect(e)
						return nil
					})
					weir.SinkToTransactional(demo.AggregateEvents(evs), file.ExactlyOnce(out, demo.Result.AppendLine)).Name("files").UID("files")
					return nil
				},
			}
		},
	}
}

// testProgram returns a program with countJob and captured streams.
func testProgram(env map[string]string) (*Program, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return &Program{Name: "prog", Jobs: []Job{countJob()}, Stdout: &stdout, Stderr: &stderr, BuildID: "test",
		Getenv: func(k string) string { return env[k] }}, &stdout, &stderr
}

func TestNormalizeArgs(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var (
		in, rel, abs, url, seedDef string
		seed, seed2, n             int64
		list                       []string
		verify                     bool
	)
	fs.StringVar(&in, "in", "", "")
	fs.StringVar(&rel, "rel-default", "data", "") // relative default, unchanged
	fs.StringVar(&abs, "abs", "", "")
	fs.StringVar(&url, "url", "", "")
	fs.Int64Var(&seed, "seed", 0, "")   // unchanged zero seed
	fs.Int64Var(&seed2, "seed2", 0, "") // explicitly non-zero
	fs.Int64Var(&n, "n", 5, "")         // unchanged plain flag: not sent
	fs.StringVar(&seedDef, "name", "x", "")
	fs.StringArrayVar(&list, "tag", nil, "")
	fs.BoolVar(&verify, "verify", false, "")
	for _, p := range []string{"in", "rel-default", "abs", "url"} {
		MarkPath(fs, p)
	}
	MarkSeed(fs, "seed")
	MarkSeed(fs, "seed2")
	MarkClientOnly(fs, "verify")
	if err := fs.Parse([]string{"--in", "logs/*.txt", "--abs", "/a/b", "--url", "s3://bucket/x", "--seed2", "9",
		"--tag", "a", "--tag", "b,c", "--verify", "--name", "y"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	got, err := normalizeArgs(fs, names, func() int64 { return 42 })
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	want := []string{"--abs=/a/b", "--in=" + filepath.Join(wd, "logs/*.txt"), "--name=y", "--rel-default=" + filepath.Join(wd, "data"),
		"--seed=42", "--seed2=9", "--tag=a", "--tag=b,c", "--url=s3://bucket/x"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("normalizeArgs =\n%q\nwant\n%q", got, want)
	}
	// What the client sends parses back to the same values.
	fs2 := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var list2 []string
	fs2.StringArrayVar(&list2, "tag", nil, "")
	fs2.ParseErrorsWhitelist.UnknownFlags = true
	if err := fs2.Parse(got); err != nil || !reflect.DeepEqual(list2, []string{"a", "b,c"}) {
		t.Fatalf("tags parse back as %q, %v", list2, err)
	}
}

func TestResolve(t *testing.T) {
	p, _, _ := testProgram(nil)
	dir := t.TempDir()
	spec := deployment.JobSpec{Name: "c1", Kind: "count", Args: []string{"--events=10", "--out=" + filepath.Join(dir, "out")},
		Config: map[string]string{"state.checkpoints.dir": dir, "parallelism.default": "3"}}
	g, jc, err := p.resolve(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) == 0 || jc.JobName != "c1" || jc.CheckpointDir != dir {
		t.Fatalf("Resolve = %d nodes, job %q, dir %q", len(g.Nodes), jc.JobName, jc.CheckpointDir)
	}
	for _, n := range g.Nodes {
		if n.Parallelism != 3 && n.Parallelism != 0 {
			t.Errorf("node %s has parallelism %d, want 3 from the spec's configuration", n.Name, n.Parallelism)
		}
	}
	for name, tc := range map[string]struct {
		spec deployment.JobSpec
		want []string
	}{
		"unknown kind": {deployment.JobSpec{Name: "x", Kind: "nosuch"}, []string{`kind "nosuch"`, "count", "same binary"}},
		"bad argument": {deployment.JobSpec{Name: "x", Kind: "count", Args: []string{"--events=many"}}, []string{"job x", "--events"}},
		"bad key":      {deployment.JobSpec{Name: "x", Kind: "count", Config: map[string]string{"no.such.key": "1"}}, []string{"job x", "no.such.key"}},
		"positional":   {deployment.JobSpec{Name: "x", Kind: "count", Args: []string{"extra"}}, []string{"unexpected arguments"}},
	} {
		_, _, err := p.resolve(context.Background(), tc.spec)
		if err == nil {
			t.Errorf("%s: Resolve succeeded", name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not contain %q", name, err, w)
			}
		}
	}
}

func wantLines(t *testing.T, dir string, events int64) {
	t.Helper()
	lines, err := file.ReadCommitted(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(events, 10), lines); d != "" {
		t.Fatal(d)
	}
}

func TestRunLocal(t *testing.T) {
	p, _, stderr := testProgram(nil)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	code := p.Run(context.Background(), []string{"run", "count", "--events", "500", "--out", out, "-D", "state.checkpoints.dir=" + dir})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	wantLines(t, out, 500)
	if code := p.Run(context.Background(), []string{"run", "count", "--detached"}); code != 2 || !strings.Contains(stderr.String(), "--detached needs --jobmanager") {
		t.Fatalf("--detached without --jobmanager: exit %d, %s", code, stderr)
	}
}

// TestRunOnJobManager submits through the client to a stand-in
// JobManager that builds the job with Program.resolve: FINISHED exits 0
// with the output committed, FAILED exits 1 naming the cause.
func TestRunOnJobManager(t *testing.T) {
	p, _, stderr := testProgram(nil)
	jm := fakejm.Start(t, p.resolve)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	args := []string{"run", "count", "--events", "700", "--out", out, "-D", "state.checkpoints.dir=" + dir, "--jobmanager", jm.Addr}
	if code := p.Run(context.Background(), args); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	wantLines(t, out, 700)

	stderr.Reset()
	fail := []string{"run", "count", "--events", "700", "--fail-at", "300", "--job-name", "poisoned", "--out", filepath.Join(dir, "out2"),
		"-D", "state.checkpoints.dir=" + dir, "--jobmanager", jm.Addr}
	err := p.Execute(context.Background(), p.Command(), fail)
	if !errors.Is(err, ErrJobNotFinished) || ExitCode(err) != 1 {
		t.Fatalf("poisoned job: %v (exit %d), want ErrJobNotFinished, exit 1", err, ExitCode(err))
	}
	for _, w := range []string{"job poisoned FAILED", "event 300 is poison"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not contain %q", err, w)
		}
	}
	if spec, _ := jm.Spec("poisoned"); spec.Config["restart-strategy.type"] != "none" {
		t.Errorf("Configure's key did not travel with the job: %v", spec.Config)
	}
}

func TestEnvironment(t *testing.T) {
	// WEIR_ROLE picks the role; WEIR_SLOTS fills --slots.
	p, _, stderr := testProgram(map[string]string{"WEIR_ROLE": "taskmanager", "WEIR_SLOTS": "0"})
	if code := p.Run(context.Background(), nil); code != 2 || !strings.Contains(stderr.String(), "--slots must be at least 1, got 0") {
		t.Fatalf("WEIR_ROLE=taskmanager WEIR_SLOTS=0: exit %d, %s", code, stderr)
	}
	// A flag on the command line wins over the environment.
	stderr.Reset()
	if code := p.Run(context.Background(), []string{"taskmanager", "--slots", "-1"}); code != 2 || !strings.Contains(stderr.String(), "got -1") {
		t.Fatalf("--slots -1 with WEIR_SLOTS=0: exit %d, %s", code, stderr)
	}
	// WEIR_ROLE does not override a command line.
	stderr.Reset()
	if code := p.Run(context.Background(), []string{"run", "count", "--detached"}); code != 2 || !strings.Contains(stderr.String(), "--detached") {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	if EnvName("state-dir") != "WEIR_STATE_DIR" {
		t.Errorf("EnvName(state-dir) = %s", EnvName("state-dir"))
	}
}
