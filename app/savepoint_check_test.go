package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/testutil"
)

// Versions of a state type: 2 adds a field (converted at restore), 3
// changes a field's kind (incompatible).
type spTotal1 struct {
	User       string
	Count, Sum int64
}

type spTotal2 struct {
	User            string
	Count, Sum, Max int64
}

type spTotal3 struct {
	User  string
	Count string
}

// numbers emits 0, 1, … up to n and then idles, its position in operator
// list state.
type numbers struct {
	n, next int64
	pos     *weir.OperatorList[int64]
	emitted *atomic.Int64
}

func (s *numbers) Open(_ context.Context, rc *weir.RuntimeContext) (err error) {
	s.pos, err = weir.GetOperatorListState[int64](rc, "pos")
	return err
}

func (s *numbers) Read(_ context.Context, dst []int64, max int) ([]int64, error) {
	for ; s.next < s.n && max > 0; max-- {
		dst = append(dst, s.next)
		s.next++
		s.emitted.Add(1)
	}
	time.Sleep(time.Millisecond)
	return dst, nil
}

func (s *numbers) SnapshotState(int64) error   { s.pos.Update([]int64{s.next}); return nil }
func (s *numbers) Close(context.Context) error { return nil }

// totals keeps one S per key.
type totals[S any] struct{ total weir.ValueState[S] }

func (f *totals[S]) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	f.total, err = weir.GetValueState[S](kc, "total")
	return err
}

func (f *totals[S]) ProcessElement(v int64, kc *weir.KeyedContext[int64], out *weir.Collector[int64]) error {
	s, _ := f.total.Value()
	f.total.Update(s)
	return nil
}

func buildTotals[S any](env *weir.Env, emitted *atomic.Int64, declare bool) {
	src := weir.FromSource(env, func() weir.Source[int64] { return &numbers{n: 100, emitted: emitted} }).UID("numbers").Parallelism(1)
	keyed := weir.KeyBy(src, func(v int64) int64 { return v % 7 })
	out := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, int64] { return &totals[S]{} }).UID("totals")
	if declare {
		out = out.Declare(weir.ValueStateOf[S]("total"))
	}
	weir.SinkTo(out, func() weir.Sink[int64] { return discard{} })
}

type discard struct{}

func (discard) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (discard) Write(context.Context, []int64) error             { return nil }
func (discard) Flush(context.Context) error                      { return nil }
func (discard) Close(context.Context) error                      { return nil }

// totalsJob builds the version --version gives, declaring its state with
// --declare.
func totalsJob() Job {
	return Job{Name: "totals", Short: "keyed totals", Define: func(fs *pflag.FlagSet) Run {
		var version int
		var declare bool
		fs.IntVar(&version, "version", 1, "state type version")
		fs.BoolVar(&declare, "declare", false, "declare the state")
		return Run{Build: func(env *weir.Env) error {
			var n atomic.Int64
			switch version {
			case 1:
				buildTotals[spTotal1](env, &n, declare)
			case 2:
				buildTotals[spTotal2](env, &n, declare)
			default:
				buildTotals[spTotal3](env, &n, declare)
			}
			return nil
		}}
	}}
}

// savepointOfTotals runs version 1 and stops it with a savepoint.
func savepointOfTotals(t *testing.T) string {
	t.Helper()
	var n atomic.Int64
	cfg := weir.NewConfig()
	if err := cfg.Set("state.checkpoints.dir", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	buildTotals[spTotal1](env, &n, false)
	job, err := env.Start(t.Context(), "totals")
	if err != nil {
		t.Fatal(err)
	}
	for n.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	sp, err := testutil.StopJob(t.Context(), job, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	return sp
}

func TestSavepointCheck(t *testing.T) {
	sp := savepointOfTotals(t)
	check := func(args ...string) (int, string, string) {
		p, stdout, stderr := testProgram(nil)
		p.Jobs = []Job{totalsJob()}
		code := p.Run(context.Background(), append([]string{"savepoint", "check", "totals", "--from", sp}, args...))
		return code, stdout.String(), stderr.String()
	}
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		result string // the state's result
		says   []string
	}{
		{"identical", []string{"--declare"}, 0, "identical", []string{"RESULT: COMPATIBLE"}},
		{"added-field", []string{"--declare", "--version", "2"}, 0, "after migration", []string{"spTotal2"}},
		{"incompatible", []string{"--declare", "--version", "3"}, 1, "incompatible", []string{"Count was int64, now string", "INCOMPATIBLE"}},
		{"undeclared", []string{"--version", "3"}, 0, "undeclared", []string{"RESULT: COMPATIBLE"}},
		{"undeclared-strict", []string{"--version", "3", "--strict"}, 1, "undeclared", []string{"INCOMPATIBLE"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := check(c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errOut)
			}
			for _, s := range c.says {
				if !strings.Contains(strings.ToUpper(out+errOut), strings.ToUpper(s)) {
					t.Errorf("output does not say %q:\n%s\n%s", s, out, errOut)
				}
			}
			_, js, _ := check(append(c.args, "--json")...)
			var rep runtime.SavepointReport
			if err := json.Unmarshal([]byte(js), &rep); err != nil {
				t.Fatalf("--json: %v\n%s", err, js)
			}
			found := ""
			for _, op := range rep.Operators {
				for _, s := range op.States {
					if op.UID == "totals" && s.Name == "total" {
						found = s.Result
					}
				}
			}
			if found != c.result {
				t.Errorf("--json: state total is %q, want %q\n%s", found, c.result, js)
			}
		})
	}
	t.Run("no-from", func(t *testing.T) {
		p, _, stderr := testProgram(nil)
		p.Jobs = []Job{totalsJob()}
		if code := p.Run(context.Background(), []string{"savepoint", "check", "totals"}); code != 2 || !strings.Contains(stderr.String(), "--from is required") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
}

// genJob reads datagen into the exactly-once file sink: both declare
// their states (the source its position, the sink its transaction
// handles), so the check has no undeclared state to report.
func genJob(out string) Job {
	return Job{Name: "gen", Short: "datagen into files", Define: func(*pflag.FlagSet) Run {
		return Run{Build: func(env *weir.Env) error {
			src := weir.FromSource(env, datagen.New(func(i int64) string { return fmt.Sprint(i) }, datagen.WithCount(1_000_000), datagen.WithRate(20_000))).UID("gen")
			weir.SinkToTransactional(src, file.ExactlyOnce(out, func(v string, dst []byte) []byte { return append(dst, v...) })).UID("files")
			return nil
		}}
	}}
}

// TestSavepointCheckConnectors: the states of the module's connectors
// are declared, so a savepoint of a job made of them checks as identical,
// even under --strict.
func TestSavepointCheckConnectors(t *testing.T) {
	out := t.TempDir()
	cfg := weir.NewConfig()
	if err := cfg.Set("state.checkpoints.dir", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	if err := genJob(out).Define(pflag.NewFlagSet("gen", pflag.ContinueOnError)).Build(env); err != nil {
		t.Fatal(err)
	}
	job, err := env.Start(t.Context(), "gen")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	sp, err := testutil.StopJob(t.Context(), job, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	p, stdout, stderr := testProgram(nil)
	p.Jobs = []Job{genJob(out)}
	if code := p.Run(context.Background(), []string{"savepoint", "check", "gen", "--from", sp, "--strict", "--json"}); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var rep runtime.SavepointReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	got := map[string]string{}
	for _, op := range rep.Operators {
		for _, s := range op.States {
			got[op.UID+" "+s.Name] = s.Result
		}
	}
	for _, k := range []string{"gen union/datagen-position", "files two-phase-commit"} {
		if got[k] != "identical" {
			t.Errorf("%s: %q, want identical (all: %v)", k, got[k], got)
		}
	}
}
