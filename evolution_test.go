package weir_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/testutil"
)

// State evolution, program level: version 1 of a job runs, stops with a
// savepoint, and version 2, whose state type changed, restores it and goes
// on. Each test runs two versions of one job in this test binary; the body
// is generic over the state types, so each evolution rule of
// docs/compatibility.md is one case.

// evolveSource emits 0, 1, 2, … up to limit from a position kept in
// operator list state. With pause it then idles (the job stays up to be
// stopped with a savepoint); without, it ends.
type evolveSource struct {
	limit int64
	pause bool
	pos   *weir.OperatorList[int64]
	next  int64
}

func (s *evolveSource) Open(_ context.Context, rc *weir.RuntimeContext) error {
	var err error
	if s.pos, err = weir.GetOperatorListState[int64](rc, "pos"); err != nil {
		return err
	}
	if p := s.pos.Get(); len(p) == 1 {
		s.next = p[0]
	}
	return nil
}

func (s *evolveSource) Read(_ context.Context, dst []int64, max int) ([]int64, error) {
	for ; s.next < s.limit && max > 0; max-- {
		dst = append(dst, s.next)
		s.next++
	}
	if s.next < s.limit {
		return dst, nil
	}
	if !s.pause {
		return dst, io.EOF
	}
	time.Sleep(time.Millisecond)
	return dst, nil
}

func (s *evolveSource) SnapshotState(int64) error   { s.pos.Update([]int64{s.next}); return nil }
func (s *evolveSource) Close(context.Context) error { return nil }

// evolveFn keeps one S per key in value state "total", updated by update
// per record, and emits line(key, state) after each.
type evolveFn[S any] struct {
	update  func(S, int64) S
	line    func(int64, S) string
	seen    *atomic.Int64
	total   weir.ValueState[S]
	version string
	opts    []weir.StateOption
}

func (f *evolveFn[S]) Open(_ context.Context, kc *weir.KeyedContext[int64]) error {
	var err error
	f.total, err = weir.GetValueState[S](kc, "total", f.opts...)
	return err
}

func (f *evolveFn[S]) ProcessElement(v int64, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	s, _ := f.total.Value()
	s = f.update(s, v)
	f.total.Update(s)
	out.Collect(f.version + " " + f.line(kc.CurrentKey(), s))
	f.seen.Add(1)
	return nil
}

// evolution is one evolution rule: the state type of version 1 (Old) and
// version 2 (New), how each updates it, what the restore must turn an Old
// into, and how version 2 prints it.
type evolution[Old, New any] struct {
	update1 func(Old, int64) Old
	update2 func(New, int64) New
	migrate func(Old) New // what restoring an Old gives
	line    func(int64, New) string
	opts    []weir.StateOption // version 2's state options
}

const (
	evolveKeys   = 37
	evolvePhase1 = 3000
	evolvePhase2 = 5000
)

// evolveBuild adds the job to env: source (parallelism 1) → keyed
// process (parallelism p) → exactly-once file sink into dir.
func evolveBuild[S any](env *weir.Env, src func() weir.Source[int64], p int, fn func() *evolveFn[S], dir string) {
	s := weir.FromSource(env, src).UID("numbers").Parallelism(1)
	keyed := weir.KeyBy(s, func(v int64) int64 { return v % evolveKeys })
	out := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, string] { return fn() }).UID("totals").Parallelism(p)
	sinkInto(out, dir)
}

// runEvolution runs version 1 to a savepoint and version 2 from it, and
// checks that version 2's output continues version 1's state exactly.
func runEvolution[Old, New any](t *testing.T, backend string, p1, p2 int, e evolution[Old, New]) {
	t.Helper()
	extra := []string{config.StateBackendType, backend}
	dir := t.TempDir() + "/out"
	var seen1 atomic.Int64
	env1, log1 := newEnv(testConfig(t, p1, "0", extra...))
	evolveBuild(env1, func() weir.Source[int64] { return &evolveSource{limit: evolvePhase1, pause: true} }, p1,
		func() *evolveFn[Old] {
			return &evolveFn[Old]{update: e.update1, line: func(k int64, _ Old) string { return fmt.Sprint(k) }, seen: &seen1, version: "v1"}
		}, dir)
	job, err := env1.Start(t.Context(), "evolve-v1")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for seen1.Load() < evolvePhase1 {
		if time.Now().After(deadline) {
			t.Fatalf("version 1 processed %d of %d records in a minute\nlog:\n%s", seen1.Load(), evolvePhase1, log1)
		}
		time.Sleep(5 * time.Millisecond)
	}
	sp, err := testutil.StopJob(t.Context(), job, t.TempDir())
	if err != nil {
		t.Fatalf("Stop: %v\nlog:\n%s", err, log1)
	}
	if err := job.Wait(); err != nil {
		t.Fatalf("version 1: %v\nlog:\n%s", err, log1)
	}

	var seen2 atomic.Int64
	env2, log2 := newEnvFrom(testConfig(t, p2, "0", extra...), sp)
	evolveBuild(env2, func() weir.Source[int64] { return &evolveSource{limit: evolvePhase1 + evolvePhase2} }, p2,
		func() *evolveFn[New] {
			return &evolveFn[New]{update: e.update2, line: e.line, seen: &seen2, version: "v2", opts: e.opts}
		}, dir)
	execute(t, env2, log2)

	// The model: version 1's states, migrated, then version 2's records.
	olds := map[int64]Old{}
	for v := range int64(evolvePhase1) {
		olds[v%evolveKeys] = e.update1(olds[v%evolveKeys], v)
	}
	news := map[int64]New{}
	for k, o := range olds {
		news[k] = e.migrate(o)
	}
	var want []string
	for v := int64(evolvePhase1); v < evolvePhase1+evolvePhase2; v++ {
		k := v % evolveKeys
		news[k] = e.update2(news[k], v)
		want = append(want, "v2 "+e.line(k, news[k]))
	}
	var got []string
	for _, l := range committed(t, dir) {
		if strings.HasPrefix(l, "v2 ") {
			got = append(got, l)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("version 2 committed %d lines, want %d; first difference at %d: got %q, want %q\nlog:\n%s",
			len(got), len(want), i, at(got, i), at(want, i), log2)
	}
	if strings.Contains(log2.String(), "restart") && strings.Contains(log2.String(), "attempt 2") {
		t.Errorf("version 2 restarted:\n%s", log2)
	}
}

// newEnvFrom is newEnv restoring from the savepoint or checkpoint at from.
func newEnvFrom(cfg *weir.Config, from string) (*weir.Env, *syncBuffer) {
	log := &syncBuffer{}
	return weir.NewEnv(weir.WithConfig(cfg), weir.WithRestoreFrom(from),
		weir.WithLogger(slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo})))), log
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<none>"
}

// The scenario: a field added to the state struct.
type totalV1 struct {
	User       string
	Count, Sum int64
}

type totalV2 struct {
	User            string
	Count, Sum, Max int64
}

var addField = evolution[totalV1, totalV2]{
	update1: func(s totalV1, v int64) totalV1 {
		return totalV1{User: fmt.Sprint("u", v%evolveKeys), Count: s.Count + 1, Sum: s.Sum + v}
	},
	update2: func(s totalV2, v int64) totalV2 {
		return totalV2{User: fmt.Sprint("u", v%evolveKeys), Count: s.Count + 1, Sum: s.Sum + v, Max: max(s.Max, v)}
	},
	migrate: func(o totalV1) totalV2 { return totalV2{User: o.User, Count: o.Count, Sum: o.Sum} },
	line: func(k int64, s totalV2) string {
		return fmt.Sprintf("%d %s %d %d %d", k, s.User, s.Count, s.Sum, s.Max)
	},
}

// Dropped, moved and renamed (by tag) fields, and widened numbers.
type reshapedV1 struct {
	Name  string
	Count int32
	Avg   float32
	Junk  []string
}

type reshapedV2 struct {
	Avg   float64
	Count int64
	Who   string `weir:"Name"`
}

var reshape = evolution[reshapedV1, reshapedV2]{
	update1: func(s reshapedV1, v int64) reshapedV1 {
		return reshapedV1{Name: fmt.Sprint("n", v%evolveKeys), Count: s.Count + 1, Avg: float32(v % 8), Junk: []string{"x"}}
	},
	update2: func(s reshapedV2, v int64) reshapedV2 {
		return reshapedV2{Who: s.Who + ".", Count: s.Count + 1, Avg: s.Avg + 0.5}
	},
	migrate: func(o reshapedV1) reshapedV2 {
		return reshapedV2{Who: o.Name, Count: int64(o.Count), Avg: float64(o.Avg)}
	},
	line: func(k int64, s reshapedV2) string { return fmt.Sprintf("%d %s %d %g", k, s.Who, s.Count, s.Avg) },
}

// An evolved struct nested in a slice, a map and a pointer.
type itemV1 struct{ ID int64 }

type itemV2 struct {
	ID   int64
	Note string
}

type nestedV1 struct {
	Items []itemV1
	ByKey map[string]itemV1
	Last  itemV1
}

type nestedV2 struct {
	Items []itemV2
	ByKey map[string]itemV2
	Last  *itemV2
}

var nest = evolution[nestedV1, nestedV2]{
	update1: func(s nestedV1, v int64) nestedV1 {
		items := append(slices.Clone(s.Items), itemV1{ID: v})
		if len(items) > 3 {
			items = items[1:]
		}
		m := map[string]itemV1{fmt.Sprint(v % 3): {ID: v}}
		for k, x := range s.ByKey {
			if _, ok := m[k]; !ok {
				m[k] = x
			}
		}
		return nestedV1{Items: items, ByKey: m, Last: itemV1{ID: v}}
	},
	update2: func(s nestedV2, v int64) nestedV2 {
		items := append(slices.Clone(s.Items), itemV2{ID: v, Note: "new"})
		if len(items) > 3 {
			items = items[1:]
		}
		return nestedV2{Items: items, ByKey: s.ByKey, Last: &itemV2{ID: v, Note: "new"}}
	},
	migrate: func(o nestedV1) nestedV2 {
		n := nestedV2{ByKey: map[string]itemV2{}, Last: &itemV2{ID: o.Last.ID}}
		for _, x := range o.Items {
			n.Items = append(n.Items, itemV2{ID: x.ID})
		}
		for k, x := range o.ByKey {
			n.ByKey[k] = itemV2{ID: x.ID}
		}
		return n
	},
	line: func(k int64, s nestedV2) string {
		keys := make([]string, 0, len(s.ByKey))
		for mk, x := range s.ByKey {
			keys = append(keys, fmt.Sprintf("%s=%d%s", mk, x.ID, x.Note))
		}
		slices.Sort(keys)
		return fmt.Sprintf("%d %v %v %v", k, s.Items, keys, *s.Last)
	},
}

// A kind change, which needs a migration function: Count becomes text,
// Sum becomes an average.
type totalText struct {
	User  string
	Count string
	Avg   float64
}

func textFromV1(o totalV1) totalText {
	return totalText{User: o.User, Count: fmt.Sprint(o.Count), Avg: float64(o.Sum) / float64(o.Count)}
}

var migrateFunc = evolution[totalV1, totalText]{
	update1: addField.update1,
	update2: func(s totalText, v int64) totalText {
		return totalText{User: s.User, Count: s.Count + "+", Avg: s.Avg + 1}
	},
	migrate: textFromV1,
	line:    func(k int64, s totalText) string { return fmt.Sprintf("%d %s %s %g", k, s.User, s.Count, s.Avg) },
	opts:    []weir.StateOption{weir.WithMigration(func(o totalV1) (totalText, error) { return textFromV1(o), nil })},
}

// A migration also wins where the type would convert on its own: whoever
// wrote it wants Max computed, not zero.
var migrateAdded = evolution[totalV1, totalV2]{
	update1: addField.update1,
	update2: func(s totalV2, v int64) totalV2 {
		return totalV2{User: s.User, Count: s.Count + 1, Sum: s.Sum + v, Max: s.Max} // Max shows what the restore set
	},
	migrate: func(o totalV1) totalV2 { return totalV2{User: o.User, Count: o.Count, Sum: o.Sum, Max: -1} },
	line:    addField.line,
	opts: []weir.StateOption{weir.WithMigration(func(o totalV1) (totalV2, error) {
		return totalV2{User: o.User, Count: o.Count, Sum: o.Sum, Max: -1}, nil
	})},
}

func TestEvolutionMigrate(t *testing.T) {
	t.Run("heap/kind-change", func(t *testing.T) { runEvolution(t, "heap", 2, 2, migrateFunc) })
	t.Run("lsm/kind-change/rescaled", func(t *testing.T) { runEvolution(t, "lsm", 2, 3, migrateFunc) })
	t.Run("heap/beats-automatic", func(t *testing.T) { runEvolution(t, "heap", 2, 2, migrateAdded) })
	t.Run("lsm/beats-automatic", func(t *testing.T) { runEvolution(t, "lsm", 2, 2, migrateAdded) })
}

func TestEvolutionAddedField(t *testing.T) {
	for _, backend := range []string{"heap", "lsm"} {
		for _, sc := range [][2]int{{2, 2}, {2, 3}, {3, 1}} {
			t.Run(fmt.Sprintf("%s/p%d-to-p%d", backend, sc[0], sc[1]), func(t *testing.T) {
				runEvolution(t, backend, sc[0], sc[1], addField)
			})
		}
	}
}

func TestEvolutionReshapedFields(t *testing.T) {
	t.Run("heap", func(t *testing.T) { runEvolution(t, "heap", 2, 2, reshape) })
	t.Run("lsm/rescaled", func(t *testing.T) { runEvolution(t, "lsm", 2, 3, reshape) })
}

func TestEvolutionNestedTypes(t *testing.T) {
	t.Run("heap/rescaled", func(t *testing.T) { runEvolution(t, "heap", 3, 2, nest) })
	t.Run("lsm", func(t *testing.T) { runEvolution(t, "lsm", 2, 2, nest) })
}

// savepointOfV1 runs version 1 (totalV1 totals, parallelism 2, its sink
// into dir) over 500 numbers and stops it with a savepoint.
func savepointOfV1(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	var seen atomic.Int64
	env, log := newEnv(testConfig(t, 2, "0", extra...))
	evolveBuild(env, func() weir.Source[int64] { return &evolveSource{limit: 500, pause: true} }, 2,
		func() *evolveFn[totalV1] {
			return &evolveFn[totalV1]{update: addField.update1, line: func(int64, totalV1) string { return "" }, seen: &seen, version: "v1"}
		}, dir)
	job, err := env.Start(t.Context(), "evolve-v1")
	if err != nil {
		t.Fatal(err)
	}
	for seen.Load() < 500 {
		time.Sleep(5 * time.Millisecond)
	}
	sp, err := testutil.StopJob(t.Context(), job, t.TempDir())
	if err != nil {
		t.Fatalf("Stop: %v\nlog:\n%s", err, log)
	}
	if err := job.Wait(); err != nil {
		t.Fatalf("version 1: %v\nlog:\n%s", err, log)
	}
	return sp
}

// TestEvolutionIncompatibleFailsAtOnce: a state type that cannot read the
// savepoint's bytes fails the job at once, without a restart, naming the
// operator, the state and the field.
func TestEvolutionIncompatibleFailsAtOnce(t *testing.T) {
	type countIsText struct {
		User  string
		Count string
		Sum   int64
	}
	for _, backend := range []string{"heap", "lsm"} {
		t.Run(backend, func(t *testing.T) {
			extra := []string{config.StateBackendType, backend}
			dir := t.TempDir() + "/out"
			var seen atomic.Int64
			sp := savepointOfV1(t, dir, extra...)

			env2, log2 := newEnvFrom(testConfig(t, 2, "0", extra...), sp)
			evolveBuild(env2, func() weir.Source[int64] { return &evolveSource{limit: 1000} }, 2,
				func() *evolveFn[countIsText] {
					return &evolveFn[countIsText]{update: func(s countIsText, _ int64) countIsText { return s }, line: func(int64, countIsText) string { return "" }, seen: &seen, version: "v2"}
				}, dir)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			start := time.Now()
			err := env2.Execute(ctx, "evolve-v2")
			took := time.Since(start)
			var jf *weir.JobFailedError
			if !errors.As(err, &jf) || !errors.Is(err, weir.ErrIncompatibleState) {
				t.Fatalf("Execute = %v, want a JobFailedError matching weir.ErrIncompatibleState\nlog:\n%s", err, log2)
			}
			if jf.Restarts != 0 || took > 10*time.Second {
				t.Errorf("failed after %d restarts and %v, want none and within seconds", jf.Restarts, took)
			}
			for _, part := range []string{`"totals"`, `"total"`, "Count", "int64", "string", "ways out"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error does not name %s: %v", part, err)
				}
			}
			t.Log(err)
		})
	}
}

// renamedState keeps its total under another state name: the old "total"
// is then a state the program no longer registers.
type renamedState struct{ evolveFn[totalV2] }

func (f *renamedState) Open(_ context.Context, kc *weir.KeyedContext[int64]) error {
	var err error
	f.total, err = weir.GetValueState[totalV2](kc, "total-v2")
	return err
}

// TestEvolutionDroppedState: a state the new version no longer registers
// fails the restore at once, unless --allow-non-restored-state, which
// drops it (the renamed state starts empty).
func TestEvolutionDroppedState(t *testing.T) {
	for _, backend := range []string{"heap", "lsm"} {
		t.Run(backend, func(t *testing.T) {
			extra := []string{config.StateBackendType, backend}
			dir := t.TempDir() + "/out"
			var seen atomic.Int64
			sp := savepointOfV1(t, dir, extra...)
			build := func(env *weir.Env) {
				s := weir.FromSource(env, func() weir.Source[int64] { return &evolveSource{limit: 1000} }).UID("numbers").Parallelism(1)
				keyed := weir.KeyBy(s, func(v int64) int64 { return v % evolveKeys })
				out := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, string] {
					return &renamedState{evolveFn[totalV2]{update: addField.update2, line: addField.line, seen: &seen, version: "v2"}}
				}).UID("totals").Parallelism(2)
				sinkInto(out, dir)
			}

			env2, log2 := newEnvFrom(testConfig(t, 2, "0", extra...), sp)
			build(env2)
			err := env2.Execute(t.Context(), "evolve-v2")
			var jf *weir.JobFailedError
			if !errors.As(err, &jf) || jf.Restarts != 0 || !strings.Contains(err.Error(), `"total"`) || !strings.Contains(err.Error(), "--allow-non-restored-state") {
				t.Fatalf("Execute = %v, want a failure without restarts naming the state and the flag\nlog:\n%s", err, log2)
			}

			log3 := &syncBuffer{}
			env3 := weir.NewEnv(weir.WithConfig(testConfig(t, 2, "0", extra...)), weir.WithRestoreFrom(sp), weir.WithAllowNonRestoredState(),
				weir.WithLogger(slog.New(slog.NewTextHandler(log3, &slog.HandlerOptions{Level: slog.LevelInfo}))))
			build(env3)
			execute(t, env3, log3)
			// The renamed state started empty: every key's first record in
			// version 2 counts 1.
			firsts := map[string]bool{}
			for _, l := range committed(t, dir) {
				if f := strings.Fields(l); len(f) == 6 && f[0] == "v2" && f[3] == "1" {
					firsts[f[1]] = true
				}
			}
			if len(firsts) != evolveKeys {
				t.Errorf("%d keys started from an empty state, want all %d\nlog:\n%s", len(firsts), evolveKeys, log3)
			}
		})
	}
}

// openCounting is evolveFn counting its Opens.
type openCounting[S any] struct {
	evolveFn[S]
	opens *atomic.Int64
}

func (f *openCounting[S]) Open(ctx context.Context, kc *weir.KeyedContext[int64]) error {
	f.opens.Add(1)
	return f.evolveFn.Open(ctx, kc)
}

// TestEvolutionDeclaredStatesCheckedBeforeDeploy: with the states
// declared (Stream.Declare), an incompatible state, or one the operator no
// longer declares, fails the job before any task opens; a compatible one
// restores as without the declaration.
func TestEvolutionDeclaredStatesCheckedBeforeDeploy(t *testing.T) {
	type countIsText struct {
		User  string
		Count string
		Sum   int64
	}
	dir := t.TempDir() + "/out"
	var seen atomic.Int64
	sp := savepointOfV1(t, dir)

	run := func(t *testing.T, decl weir.StateDecl, fn func(opens *atomic.Int64) weir.KeyedProcessFunction[int64, int64, string]) (error, int64) {
		var opens atomic.Int64
		env, _ := newEnvFrom(testConfig(t, 2, "0"), sp)
		s := weir.FromSource(env, func() weir.Source[int64] { return &evolveSource{limit: 1000} }).UID("numbers").Parallelism(1)
		keyed := weir.KeyBy(s, func(v int64) int64 { return v % evolveKeys })
		out := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, string] { return fn(&opens) }).UID("totals").Declare(decl)
		sinkInto(out, dir) // the restored sink commits into its folder
		return env.Execute(t.Context(), "evolve-v2"), opens.Load()
	}
	t.Run("incompatible", func(t *testing.T) {
		err, opens := run(t, weir.ValueStateOf[countIsText]("total"), func(opens *atomic.Int64) weir.KeyedProcessFunction[int64, int64, string] {
			return &openCounting[countIsText]{evolveFn[countIsText]{update: func(s countIsText, _ int64) countIsText { return s }, line: func(int64, countIsText) string { return "" }, seen: &seen}, opens}
		})
		if !errors.Is(err, weir.ErrIncompatibleState) || opens != 0 {
			t.Fatalf("Execute = %v after %d Opens, want weir.ErrIncompatibleState before any task opened", err, opens)
		}
		for _, part := range []string{`"totals"`, `"total"`, "Count", sp} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("error does not name %s: %v", part, err)
			}
		}
	})
	t.Run("dropped", func(t *testing.T) {
		err, opens := run(t, weir.ValueStateOf[totalV2]("total-v2"), func(opens *atomic.Int64) weir.KeyedProcessFunction[int64, int64, string] {
			return &openCounting[totalV2]{evolveFn[totalV2]{update: addField.update2, line: addField.line, seen: &seen}, opens}
		})
		if err == nil || opens != 0 || !strings.Contains(err.Error(), "no longer declares") {
			t.Fatalf("Execute = %v after %d Opens, want a dropped-state failure before any task opened", err, opens)
		}
	})
	t.Run("compatible", func(t *testing.T) {
		err, opens := run(t, weir.ValueStateOf[totalV2]("total"), func(opens *atomic.Int64) weir.KeyedProcessFunction[int64, int64, string] {
			return &openCounting[totalV2]{evolveFn[totalV2]{update: addField.update2, line: addField.line, seen: &seen}, opens}
		})
		if err != nil || opens == 0 {
			t.Fatalf("Execute = %v after %d Opens, want a restored run", err, opens)
		}
	})
	t.Run("declared-migration", func(t *testing.T) {
		// The registration gives no options: the declaration's WithMigration
		// applies.
		err, opens := run(t, weir.ValueStateOf[totalText]("total", weir.WithMigration(func(o totalV1) (totalText, error) { return textFromV1(o), nil })),
			func(opens *atomic.Int64) weir.KeyedProcessFunction[int64, int64, string] {
				return &openCounting[totalText]{evolveFn[totalText]{update: migrateFunc.update2, line: migrateFunc.line, seen: &seen}, opens}
			})
		if err != nil || opens == 0 {
			t.Fatalf("Execute = %v after %d Opens, want a restored run", err, opens)
		}
	})
	t.Run("registered-unlike-declared", func(t *testing.T) {
		err, _ := run(t, weir.ValueStateOf[totalV2]("total"), func(opens *atomic.Int64) weir.KeyedProcessFunction[int64, int64, string] {
			return &openCounting[totalText]{evolveFn[totalText]{update: migrateFunc.update2, line: migrateFunc.line, seen: &seen}, opens}
		})
		var jf *weir.JobFailedError
		if !errors.As(err, &jf) || jf.Restarts != 0 || !strings.Contains(err.Error(), "it is declared as value state of weir_test.totalV2") {
			t.Fatalf("Execute = %v, want a failure naming the declaration, without restarts", err)
		}
	})
	t.Run("key-type", func(t *testing.T) {
		var opens atomic.Int64
		env, _ := newEnvFrom(testConfig(t, 2, "0"), sp)
		s := weir.FromSource(env, func() weir.Source[int64] { return &evolveSource{limit: 1000} }).UID("numbers").Parallelism(1)
		keyed := weir.KeyBy(s, func(v int64) string { return fmt.Sprint(v % evolveKeys) })
		out := weir.Process(keyed, func() weir.KeyedProcessFunction[string, int64, string] {
			opens.Add(1)
			return nil
		}).UID("totals")
		sinkInto(out, t.TempDir())
		err := env.Execute(t.Context(), "evolve-v2")
		if !errors.Is(err, weir.ErrIncompatibleState) || opens.Load() != 0 || !strings.Contains(err.Error(), "key") {
			t.Fatalf("Execute = %v, want the key type refused before deployment", err)
		}
	})
}
