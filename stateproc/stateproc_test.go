package stateproc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/internal/testutil"
	"github.com/weirstream/weir/stateproc"
)

type totalV1 struct {
	User       string
	Count, Sum int64
}

// total is version 2: Max added.
type total struct {
	User            string
	Count, Sum, Max int64
}

// numbers emits 0…n-1, its position in operator list state, then idles
// until the job is stopped.
type numbers struct {
	n, next int64
	emitted *atomic.Int64
	pos     *weir.OperatorList[int64]
}

func (s *numbers) Open(_ context.Context, rc *weir.RuntimeContext) (err error) {
	s.pos, err = weir.GetOperatorListState[int64](rc, "pos")
	if p := s.pos.Get(); err == nil && len(p) == 1 {
		s.next = p[0]
	}
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

// counter keeps a T per key and prints it after each record.
type counter[T any] struct {
	st     weir.ValueState[T]
	update func(T, int64, int64) T
	show   func(int64, T) string
}

func (c *counter[T]) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	c.st, err = weir.GetValueState[T](kc, "total")
	return err
}

func (c *counter[T]) ProcessElement(v int64, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	t, _ := c.st.Value()
	t = c.update(t, kc.CurrentKey(), v)
	c.st.Update(t)
	out.Collect(c.show(kc.CurrentKey(), t))
	return nil
}

type lines struct {
	mu sync.Mutex
	l  []string
}

type collect struct{ out *lines }

func (c collect) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (c collect) Write(_ context.Context, b []string) error {
	c.out.mu.Lock()
	c.out.l = append(c.out.l, b...)
	c.out.mu.Unlock()
	return nil
}
func (c collect) Flush(context.Context) error { return nil }
func (c collect) Close(context.Context) error { return nil }

func job[T any](env *weir.Env, src *numbers, keys int64, update func(T, int64, int64) T, show func(int64, T) string, out *lines) {
	s := weir.FromSource(env, func() weir.Source[int64] { return src }).UID("numbers").Parallelism(1)
	keyed := weir.KeyBy(s, func(v int64) int64 { return v % keys })
	res := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, string] {
		return &counter[T]{update: update, show: show}
	}).UID("totals")
	weir.SinkTo(res, func() weir.Sink[string] { return collect{out} })
}

func config(t *testing.T, p int) *weir.Config {
	cfg := weir.NewConfig()
	for k, v := range map[string]string{"state.checkpoints.dir": t.TempDir(), "parallelism.default": fmt.Sprint(p)} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// TestReadTransformWriteRestore: a job's state is read from its savepoint
// as the old type, re-keyed (10 keys folded into 4) and converted in Go,
// written as a new savepoint at another parallelism, and a new version of
// the job restored from it continues exactly from the transformed state.
func TestReadTransformWriteRestore(t *testing.T) {
	ctx := t.Context()
	sp := runV1(t)
	s, err := stateproc.Open(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	old, err := stateproc.ReadValues[int64, totalV1](ctx, s, "totals", "total")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, op := range s.Operators() {
		for _, st := range op.States {
			if op.UID == "totals" && st.Name == "total" {
				found = st.Kind == "value state" && strings.Contains(st.Value, "totalV1{User string; Count int64; Sum int64}") && st.Key == "int64"
				if !found {
					t.Errorf("state total described as %+v", st)
				}
			}
		}
	}
	if !found {
		t.Errorf("Operators() = %+v: no state total of operator totals", s.Operators())
	}
	checkFoldAndRun(t, old, nil)
}

// TestKeepCarriesOtherOperators: the source's position is kept (Keep)
// while the keyed state is rewritten, so version 2 resumes reading where
// version 1 stopped instead of from the start.
func TestKeepCarriesOtherOperators(t *testing.T) {
	ctx := t.Context()
	sp := runV1(t)
	s, err := stateproc.Open(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	old, err := stateproc.ReadValues[int64, totalV1](ctx, s, "totals", "total")
	if err != nil {
		t.Fatal(err)
	}
	checkFoldAndRun(t, old, func(t *testing.T, w *stateproc.Writer) int64 {
		if err := w.Keep(s, "numbers"); err != nil {
			t.Fatal(err)
		}
		return 1000
	})
	w := stateproc.NewWriter(128)
	if err := w.Keep(s, "numbers", "numbers"); err == nil || !strings.Contains(err.Error(), "kept twice") {
		t.Errorf("Keep of one operator twice = %v, want an error", err)
	}
	if err := stateproc.NewWriter(64).Keep(s, "numbers"); err == nil || !strings.Contains(err.Error(), "max parallelism") {
		t.Errorf("Keep into another max parallelism = %v, want an error", err)
	}
	if err := w.Keep(s, "nope"); err == nil || !strings.Contains(err.Error(), "numbers") {
		t.Errorf("Keep of a missing operator = %v, want an error naming the ones there", err)
	}
}

// TestExportBootstrapRun: the state exported as JSON lines by `state
// export` (no Go types involved) is parsed, bootstrapped into a new
// savepoint with stateproc, and restored: the job continues exactly.
func TestExportBootstrapRun(t *testing.T) {
	sp := runV1(t)
	var out, errOut bytes.Buffer
	p := &app.Program{Name: "prog", Stdout: &out, Stderr: &errOut, BuildID: "test"}
	if code := p.Run(t.Context(), []string{"state", "export", "--from", sp, "--operator", "totals", "--state", "total"}); code != 0 {
		t.Fatalf("state export: exit %d: %s", code, errOut.String())
	}
	old := map[int64]totalV1{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var line struct {
			Key   int64
			Value totalV1
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		old[line.Key] = line.Value
	}
	checkFoldAndRun(t, old, nil)
}

// runV1 runs version 1 over 1000 numbers keyed by v%10 and stops it with
// a savepoint.
func runV1(t *testing.T) string {
	ctx := t.Context()
	var emitted atomic.Int64
	env := weir.NewEnv(weir.WithConfig(config(t, 2)))
	job(env, &numbers{n: 1000, emitted: &emitted}, 10,
		func(t totalV1, k, v int64) totalV1 {
			return totalV1{User: fmt.Sprint("u", k), Count: t.Count + 1, Sum: t.Sum + v}
		}, func(int64, totalV1) string { return "" }, &lines{})
	j, err := env.Start(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	for emitted.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
	// The source has emitted all; wait until the keyed operator processed
	// them: stop takes a checkpoint after every record before it.
	sp, err := testutil.StopJob(ctx, j, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	return sp
}

// checkFoldAndRun folds version 1's state of 10 keys into 4, converted
// to version 2's type, writes it at parallelism 3, restores version 2
// from it and checks its output exactly.
// With carry, the source's position is written by it (kept, or
// bootstrapped), which returns the position: version 2 reads from there
// instead of from 0.
func checkFoldAndRun(t *testing.T, old map[int64]totalV1, carry func(*testing.T, *stateproc.Writer) int64) {
	ctx := t.Context()
	if len(old) != 10 || old[3].Count != 100 || old[3].User != "u3" {
		t.Fatalf("read %d keys, key 3 = %+v; want 10 keys, key 3 counted 100 times", len(old), old[3])
	}
	folded := map[int64]total{}
	for k, v := range old {
		f := folded[k%4]
		folded[k%4] = total{User: fmt.Sprint("g", k%4), Count: f.Count + v.Count, Sum: f.Sum + v.Sum}
	}
	w := stateproc.NewWriter(128)
	from := int64(0)
	if carry != nil {
		from = carry(t, w)
	}
	if err := stateproc.WriteValues(stateproc.KeyedOperator[int64](w, "totals", 3), "total", folded); err != nil {
		t.Fatal(err)
	}
	written, err := w.Write(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	// Version 2 restores it at parallelism 3 and reads 400 more numbers
	// keyed by v%4 (its source starts over: the written savepoint holds
	// no source position).
	out := &lines{}
	var emitted2 atomic.Int64
	env2 := weir.NewEnv(weir.WithConfig(config(t, 3)), weir.WithRestoreFrom(written))
	src := &numbers{n: from + 400, emitted: &emitted2}
	job(env2, src, 4, func(t total, k, v int64) total {
		return total{User: t.User, Count: t.Count + 1, Sum: t.Sum + v, Max: max(t.Max, v)}
	}, func(k int64, t total) string { return fmt.Sprintf("%d %s %d %d %d", k, t.User, t.Count, t.Sum, t.Max) }, out)
	j2, err := env2.Start(ctx, "v2")
	if err != nil {
		t.Fatal(err)
	}
	for emitted2.Load() < 400 {
		time.Sleep(time.Millisecond)
	}
	if _, err := testutil.StopJob(ctx, j2, ""); err != nil {
		t.Fatal(err)
	}
	if err := j2.Wait(); err != nil {
		t.Fatal(err)
	}
	model := map[int64]total{}
	for k, v := range folded {
		model[k] = v
	}
	var want []string
	for v := from; v < from+400; v++ {
		k := v % 4
		m := model[k]
		m = total{User: m.User, Count: m.Count + 1, Sum: m.Sum + v, Max: max(m.Max, v)}
		model[k] = m
		want = append(want, fmt.Sprintf("%d %s %d %d %d", k, m.User, m.Count, m.Sum, m.Max))
	}
	slices.Sort(want)
	slices.Sort(out.l)
	if !slices.Equal(out.l, want) {
		t.Fatalf("version 2 printed %d lines, want %d; first: %v, want %v", len(out.l), len(want), head(out.l), head(want))
	}
}

func head(s []string) []string { return s[:min(3, len(s))] }
