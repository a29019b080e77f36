package weir_test

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/print"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
)

func ints(offset int64) func(int64) int64 { return func(i int64) int64 { return offset + i } }

// printed returns the lines a print sink wrote.
func printed(b *bytes.Buffer) []string {
	s := strings.TrimSuffix(b.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// TestUnionFilterFlatMap: two sources of different parallelism, unioned,
// filtered and flat-mapped, into a print sink.
func TestUnionFilterFlatMap(t *testing.T) {
	env, log := newEnv(testConfig(t, 1, "0"))
	a := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(100))).Parallelism(2)
	b := weir.FromSource(env, datagen.New(ints(1000), datagen.WithCount(50)))
	u := weir.Union(a, b).Parallelism(3)
	even := weir.Filter(u, func(v int64) bool { return v%2 == 0 })
	both := weir.FlatMap(even, func(v int64, out *weir.Collector[int64]) error {
		out.Collect(v)
		out.Collect(-v - 1)
		return nil
	})
	var buf bytes.Buffer
	weir.SinkTo(weir.Map(both, func(v int64) string { return strconv.FormatInt(v, 10) }), print.New[string](&buf)).Parallelism(1)
	execute(t, env, log)
	var want []string
	for _, v := range append(seq(0, 100), seq(1000, 1050)...) {
		if v%2 == 0 {
			want = append(want, fmt.Sprint(v), fmt.Sprint(-v-1))
		}
	}
	sameMultiset(t, want, printed(&buf))
}

func seq(from, to int64) []int64 {
	var s []int64
	for v := from; v < to; v++ {
		s = append(s, v)
	}
	return s
}

// TestRebalance: one producer subtask spreads its records over three
// consumers. Rebalance is round-robin per batch (the engine moves batches),
// so with a batch size of 10 and 300 records each consumer gets 100.
func TestRebalance(t *testing.T) {
	env, log := newEnv(testConfig(t, 1, "0", "pipeline.batch-size", "10"))
	src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(300)))
	r := weir.Rebalance(weir.Map(src, func(v int64) string { return fmt.Sprint(v) })).Parallelism(3)
	var buf bytes.Buffer
	weir.SinkTo(r, print.New[string](&buf)).Parallelism(3)
	execute(t, env, log)
	lines := printed(&buf)
	perSubtask := map[string]int{}
	var values []string
	for _, l := range lines {
		prefix, v, ok := strings.Cut(l, "> ")
		if !ok {
			t.Fatalf("line %q has no subtask prefix", l)
		}
		perSubtask[prefix]++
		values = append(values, v)
	}
	var want []string
	for _, v := range seq(0, 300) {
		want = append(want, fmt.Sprint(v))
	}
	sameMultiset(t, want, values)
	if perSubtask["1"] != 100 || perSubtask["2"] != 100 || perSubtask["3"] != 100 {
		t.Errorf("records per sink subtask = %v, want 100 each", perSubtask)
	}
}

// TestBroadcast: every record reaches every subtask of the consumer.
func TestBroadcast(t *testing.T) {
	env, log := newEnv(testConfig(t, 1, "0"))
	src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(50)))
	bc := weir.Broadcast(weir.Map(src, func(v int64) string { return fmt.Sprint(v) })).Stream().Parallelism(3)
	var buf bytes.Buffer
	weir.SinkTo(bc, print.New[string](&buf)).Parallelism(3)
	execute(t, env, log)
	var want []string
	for s := 1; s <= 3; s++ {
		for _, v := range seq(0, 50) {
			want = append(want, fmt.Sprintf("%d> %d", s, v))
		}
	}
	sameMultiset(t, want, printed(&buf))
}

// TestPrintSinkParallelismOne: no subtask prefix at parallelism 1, and each
// source subtask's records keep their order through a forward chain.
func TestPrintSinkParallelismOne(t *testing.T) {
	env, log := newEnv(testConfig(t, 1, "5ms"))
	src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(5000)))
	var buf bytes.Buffer
	weir.SinkTo(weir.Map(src, func(v int64) string { return fmt.Sprint(v) }), print.New[string](&buf))
	execute(t, env, log)
	var want []string
	for _, v := range seq(0, 5000) {
		want = append(want, fmt.Sprint(v))
	}
	if got := printed(&buf); !slices.Equal(got, want) {
		sameMultiset(t, want, got)
		t.Fatalf("lines are complete but out of order")
	}
}

// TestOperatorsExactlyOnceUnderFaults runs union (sources of parallelism 2
// and 1), rebalance, filter, flat map and broadcast into an exactly-once
// sink of parallelism 2 with failures at every fault point: barriers align
// across inputs of different parallelism and partitioning, and the
// committed multiset is exact (every kept record twice, once per sink
// subtask, as the broadcast sends it to both).
func TestOperatorsExactlyOnceUnderFaults(t *testing.T) {
	const n = 40_000
	env, log := newEnv(testConfig(t, 1, "10ms"))
	inj := injector(env, 4, 11, 2*n, faults.AllPoints()...)
	a := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(n))).Parallelism(2).UID("a")
	b := weir.FromSource(env, datagen.New(ints(n), datagen.WithCount(n))).UID("b")
	u := weir.Rebalance(weir.Union(a, b).Parallelism(2)).Parallelism(3)
	kept := weir.Filter(u, func(v int64) bool { return v%3 != 0 })
	strs := weir.FlatMap(kept, func(v int64, out *weir.Collector[string]) error {
		out.Collect(fmt.Sprint(v))
		if v%5 == 0 {
			out.Collect(fmt.Sprintf("%d/5", v))
		}
		return nil
	})
	out := sinkLines(t, weir.Broadcast(strs).Stream().Parallelism(2))
	execute(t, env, log)
	if inj.Fired() != 4 {
		t.Errorf("%d of 4 failures fired: %v", inj.Fired(), inj.Log())
	}
	var want []string
	for v := int64(0); v < 2*n; v++ {
		if v%3 == 0 {
			continue
		}
		want = append(want, fmt.Sprint(v), fmt.Sprint(v))
		if v%5 == 0 {
			want = append(want, fmt.Sprintf("%d/5", v), fmt.Sprintf("%d/5", v))
		}
	}
	sameMultiset(t, want, committed(t, out))
	t.Logf("exact with %d restarts and %d checkpoints", hooks.Plan(env).Status.Restarts.Load(), hooks.Plan(env).Status.CompletedCheckpoints.Load())
}
