package stateproc_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/testutil"
	"github.com/weirstream/weir/stateproc"
)

// TestBootstrapWritesWhatTheRuntimeWrites bootstraps, from Go values, the
// state the timers golden job (golden_test.go) had when the runtime took
// its savepoint timers-heap-savepoint-v3: the source's position (operator
// list state), per key a count and a processing-time timer an hour after
// 2026-01-01, and each keyed subtask's event-time clock (union list
// state). The written operators equal the runtime's: state tables,
// operator list state, key-group index and keyed files byte for byte.
func TestBootstrapWritesWhatTheRuntimeWrites(t *testing.T) {
	ctx := t.Context()
	counts, timers := map[int64]int64{}, map[int64][]int64{}
	at := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC).UnixMilli()
	for v := range int64(400) {
		counts[v%23]++
		timers[v%23] = []int64{at + v%23}
	}
	w := stateproc.NewWriter(128)
	if err := stateproc.WriteOperatorList(stateproc.NonKeyedOperator(w, "numbers", 1), "pos", [][]int64{{400}}); err != nil {
		t.Fatal(err)
	}
	op := stateproc.KeyedOperator[int64](w, "timers", 2)
	if err := stateproc.WriteValues(op, "count", counts); err != nil {
		t.Fatal(err)
	}
	if err := stateproc.WriteProcessingTimers(op, timers); err != nil {
		t.Fatal(err)
	}
	if err := stateproc.WriteUnionList(op, "weir.event-time", [][]int64{{math.MinInt64}, {math.MinInt64}}); err != nil {
		t.Fatal(err)
	}
	path, err := w.Write(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, gfs, err := storage.LoadPath(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	want, wfs, err := storage.LoadPath(ctx, golden("timers-heap-savepoint-v3", "savepoint"))
	if err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"numbers", "timers"} {
		g, wo := got.Operator(uid), want.Operator(uid)
		if g.Parallelism != wo.Parallelism || g.MaxParallelism != wo.MaxParallelism || !reflect.DeepEqual(g.States, wo.States) || len(g.Subtasks) != len(wo.Subtasks) {
			t.Fatalf("operator %s: %+v\nwant %+v", uid, g, wo)
		}
		for i := range g.Subtasks {
			gs, ws := g.Subtasks[i].State, wo.Subtasks[i].State
			if !reflect.DeepEqual(gs.Operator, ws.Operator) || (gs.Keyed == nil) != (ws.Keyed == nil) {
				t.Fatalf("operator %s subtask %d: %+v\nwant %+v", uid, i, gs, ws)
			}
			if gs.Keyed == nil {
				continue
			}
			if !reflect.DeepEqual(gs.Keyed.KeyGroups, ws.Keyed.KeyGroups) || !bytes.Equal(readAll(t, gfs, gs.Keyed.File), readAll(t, wfs, ws.Keyed.File)) {
				t.Errorf("operator %s subtask %d: keyed file differs from the runtime's", uid, i)
			}
		}
	}
}

// labelled keeps a label per key and prints, for each timer it fires, the
// domain, key, time and label: a timer fires with its key current.
type labelled struct {
	label weir.ValueState[string]
	out   *lines
}

func (f *labelled) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	f.label, err = weir.GetValueState[string](kc, "label")
	return err
}

func (f *labelled) ProcessElement(int64, *weir.KeyedContext[int64], *weir.Collector[string]) error {
	return nil
}

func (f *labelled) OnTimer(ts int64, kc *weir.KeyedContext[int64], _ *weir.Collector[string]) error {
	l, _ := f.label.Value()
	d := "p"
	if kc.TimeDomain() == weir.EventTime {
		d = "e"
	}
	f.out.mu.Lock()
	f.out.l = append(f.out.l, fmt.Sprintf("%s %d %d %s", d, kc.CurrentKey(), ts, l))
	f.out.mu.Unlock()
	return nil
}

// TestBootstrapTimersFire bootstraps a keyed operator with a label, an
// event-time timer and a processing-time timer per key (keys 0…22, which
// the job's records have, and 100…104, which only the savepoint has), at
// parallelism 2; a job restored from it at parallelism 3 fires each timer
// exactly once with its key current: the processing-time ones (already
// due) at once, the event-time ones when the watermark of its records
// (stamped v seconds, v < 60) passes them. A processing-time timer in
// 2100 does not fire.
func TestBootstrapTimersFire(t *testing.T) {
	ctx := t.Context()
	labels, events, procs := map[int64]string{}, map[int64][]int64{}, map[int64][]int64{}
	var want []string
	for _, k := range append(slices.Collect(func(yield func(int64) bool) {
		for k := range int64(23) {
			yield(k)
		}
	}), 100, 101, 102, 103, 104) {
		labels[k] = fmt.Sprint("key-", k)
		events[k] = []int64{10_000 + k, 10_000 + k} // one timer: equal times are one
		procs[k] = []int64{1_000 + k}
		want = append(want, fmt.Sprintf("e %d %d key-%d", k, 10_000+k, k), fmt.Sprintf("p %d %d key-%d", k, 1_000+k, k))
	}
	procs[3] = append(procs[3], time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	w := stateproc.NewWriter(128)
	op := stateproc.KeyedOperator[int64](w, "timers", 2)
	for _, err := range []error{
		stateproc.WriteValues(op, "label", labels),
		stateproc.WriteEventTimers(op, events),
		stateproc.WriteProcessingTimers(op, procs),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	path, err := w.Write(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	out := &lines{}
	var emitted atomic.Int64
	env := weir.NewEnv(weir.WithConfig(config(t, 3)), weir.WithRestoreFrom(path))
	strategy := weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v int64, _ int64) int64 { return v * 1000 })
	src := weir.FromSourceWithWatermarks(env, func() weir.Source[int64] { return &numbers{n: 60, emitted: &emitted} }, strategy).UID("numbers").Parallelism(1)
	keyed := weir.KeyBy(src, func(v int64) int64 { return v % 23 })
	res := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, string] { return &labelled{out: out} }).UID("timers")
	weir.SinkTo(res, func() weir.Sink[string] { return collect{&lines{}} })
	j, err := env.Start(ctx, "timers")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		out.mu.Lock()
		n := len(out.l)
		out.mu.Unlock()
		if n >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := testutil.StopJob(ctx, j, ""); err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	slices.Sort(out.l)
	if !slices.Equal(out.l, want) {
		t.Fatalf("fired:\n%s\nwant:\n%s", strings.Join(out.l, "\n"), strings.Join(want, "\n"))
	}
}

// TestBootstrapSourcePosition writes a source's position as operator list
// state: written at the position version 1 stopped at, the operator is
// what the runtime's savepoint holds; written at 700, version 2 resumes
// reading there (700…1099) on top of the transformed keyed state.
func TestBootstrapSourcePosition(t *testing.T) {
	ctx := t.Context()
	sp := runV1(t)
	s, err := stateproc.Open(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	w := stateproc.NewWriter(128)
	if err := stateproc.WriteOperatorList(stateproc.NonKeyedOperator(w, "numbers", 1), "pos", [][]int64{{1000}}); err != nil {
		t.Fatal(err)
	}
	path, err := w.Write(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := storage.LoadPath(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := storage.LoadPath(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := got.Operator("numbers"), want.Operator("numbers"); !reflect.DeepEqual(g, w) {
		t.Errorf("bootstrapped source operator %+v, the runtime's %+v", g, w)
	}

	old, err := stateproc.ReadValues[int64, totalV1](ctx, s, "totals", "total")
	if err != nil {
		t.Fatal(err)
	}
	checkFoldAndRun(t, old, func(t *testing.T, w *stateproc.Writer) int64 {
		if err := stateproc.WriteOperatorList(stateproc.NonKeyedOperator(w, "numbers", 1), "pos", [][]int64{{700}}); err != nil {
			t.Fatal(err)
		}
		return 700
	})
}

// partOffset is a partition's next offset, as a partitioned source keeps
// it in union list state.
type partOffset struct{ Part, Next int64 }

// parts reads partition Subtask() of two: numbers part*10000 + offset from
// the offset its union list state has for it, up to offset n.
type parts struct {
	n       int64
	emitted *atomic.Int64
	part    int64
	next    int64
	offsets *weir.OperatorList[partOffset]
}

func (s *parts) Open(_ context.Context, rc *weir.RuntimeContext) (err error) {
	if s.offsets, err = weir.GetUnionListState[partOffset](rc, "offsets"); err != nil {
		return err
	}
	s.part = int64(rc.Subtask())
	for _, o := range s.offsets.Get() { // every subtask sees every offset
		if o.Part == s.part {
			s.next = o.Next
		}
	}
	return nil
}

func (s *parts) Read(_ context.Context, dst []int64, max int) ([]int64, error) {
	for ; s.next < s.n && max > 0; max-- {
		dst = append(dst, s.part*10000+s.next)
		s.next++
		s.emitted.Add(1)
	}
	time.Sleep(time.Millisecond)
	return dst, nil
}

func (s *parts) SnapshotState(int64) error {
	s.offsets.Update([]partOffset{{s.part, s.next}})
	return nil
}
func (s *parts) Close(context.Context) error { return nil }

// TestBootstrapUnionList writes the offsets of two partitions as union
// list state of one subtask; the source restored at parallelism 2 finds
// each partition's offset in every subtask and resumes there.
func TestBootstrapUnionList(t *testing.T) {
	ctx := t.Context()
	w := stateproc.NewWriter(128)
	if err := stateproc.WriteUnionList(stateproc.NonKeyedOperator(w, "parts", 1), "offsets", [][]partOffset{{{0, 5}, {1, 7}}}); err != nil {
		t.Fatal(err)
	}
	path, err := w.Write(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := &lines{}
	var emitted atomic.Int64
	env := weir.NewEnv(weir.WithConfig(config(t, 2)), weir.WithRestoreFrom(path))
	src := weir.FromSource(env, func() weir.Source[int64] { return &parts{n: 10, emitted: &emitted} }).UID("parts").Parallelism(2)
	weir.SinkTo(weir.Map(src, func(v int64) string { return fmt.Sprint(v) }), func() weir.Sink[string] { return collect{out} })
	j, err := env.Start(ctx, "parts")
	if err != nil {
		t.Fatal(err)
	}
	for emitted.Load() < 8 {
		time.Sleep(time.Millisecond)
	}
	if _, err := testutil.StopJob(ctx, j, ""); err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	want := []string{"10007", "10008", "10009", "5", "6", "7", "8", "9"}
	slices.Sort(out.l)
	if !slices.Equal(out.l, want) {
		t.Fatalf("read %v, want %v", out.l, want)
	}
}

func TestWriterRefusals(t *testing.T) {
	w := stateproc.NewWriter(128)
	src := stateproc.NonKeyedOperator(w, "src", 2)
	for name, c := range map[string]struct {
		err  error
		says string
	}{
		"too-many-subtasks": {stateproc.WriteOperatorList(src, "pos", [][]int64{{1}, {2}, {3}}), "3 subtasks' elements for parallelism 2"},
		"union-prefix":      {stateproc.WriteOperatorList(src, "union/x", [][]int64{{1}}), "WriteUnionList"},
		"twice": {func() error {
			_ = stateproc.WriteOperatorList(src, "twice", [][]int64{{1}})
			return stateproc.WriteOperatorList(src, "twice", [][]int64{{2}})
		}(), `"twice" written twice`},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.says) {
			t.Errorf("%s: err = %v, want one saying %q", name, c.err, c.says)
		}
	}
	stateproc.KeyedOperator[int64](w, "src", 1)
	if _, err := w.Write(t.Context(), t.TempDir()); err == nil || !strings.Contains(err.Error(), `operator "src": added twice`) {
		t.Errorf("an operator added twice: Write = %v", err)
	}
	w = stateproc.NewWriter(128)
	stateproc.NonKeyedOperator(w, "big", 129)
	if _, err := w.Write(t.Context(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "parallelism 129 outside") {
		t.Errorf("parallelism above max parallelism: Write = %v", err)
	}
}
