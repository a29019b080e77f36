package weir_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
)

// counting is a keyed running count that emits "<tag>,<key>,<count>" per
// record and reports every Open (one per subtask and attempt) to opened.
type counting struct {
	tag    string
	opened func(attempt int)
	fail   func(v int64) error // nil: never fails
	count  weir.ValueState[int64]
}

func (c *counting) Open(ctx context.Context, kc *weir.KeyedContext[int64]) error {
	c.opened(kc.Attempt())
	var err error
	c.count, err = weir.GetValueState[int64](kc, "count")
	return err
}

func (c *counting) ProcessElement(v int64, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	if c.fail != nil {
		if err := c.fail(v); err != nil {
			return err
		}
	}
	n, _ := c.count.Value()
	n++
	c.count.Update(n)
	out.Collect(fmt.Sprintf("%s,%d,%d", c.tag, kc.CurrentKey(), n))
	return nil
}

// openCounter counts Opens and remembers the highest attempt seen.
type openCounter struct {
	opens      atomic.Int64
	maxAttempt atomic.Int64
}

func (o *openCounter) opened(attempt int) {
	o.opens.Add(1)
	for {
		m := o.maxAttempt.Load()
		if int64(attempt) <= m || o.maxAttempt.CompareAndSwap(m, int64(attempt)) {
			return
		}
	}
}

// runningCounts is what counting emits for values 0..n-1 keyed by v%keys.
func runningCounts(tag string, n, keys int64) []string {
	var out []string
	seen := map[int64]int64{}
	for v := range n {
		k := v % keys
		seen[k]++
		out = append(out, fmt.Sprintf("%s,%d,%d", tag, k, seen[k]))
	}
	return out
}

var errInjectedOnce = errors.New("injected failure in pipeline A")

// TestRegionFailover runs two independent keyed pipelines in one job, two
// pipelined regions. A task of pipeline A fails once: only A's region is
// cancelled and restored from the newest completed checkpoint; pipeline
// B's tasks are never restarted (one Open per subtask, attempt 0) and its
// records keep flowing while A waits out its one-second restart delay.
// Both outputs are exact.
func TestRegionFailover(t *testing.T) {
	const (
		p        = 2
		nA, nB   = 60_000, 100_000
		keys     = 7
		failAt   = 20_000
		rateB    = 20_000 // B runs about 5 s, well past A's restart
		minMoved = 1_000  // records B must pass on while A waits
	)
	cfg := testConfig(t, p, "50ms", config.FixedDelayDelay, "1s")
	env, log := newEnv(cfg)

	var openA, openB openCounter
	var seenB atomic.Int64 // records B's keyed function has processed
	var failed atomic.Bool
	var atFailure, atRestart atomic.Int64
	atRestart.Store(-1)

	a := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(nA))).UID("source-a")
	outA := weir.Process(weir.KeyBy(a, func(v int64) int64 { return v % keys }), func() weir.KeyedProcessFunction[int64, int64, string] {
		return &counting{tag: "a", opened: func(attempt int) {
			openA.opened(attempt)
			if attempt > 0 {
				atRestart.CompareAndSwap(-1, seenB.Load())
			}
		}, fail: func(v int64) error {
			if v == failAt && failed.CompareAndSwap(false, true) {
				atFailure.Store(seenB.Load())
				return errInjectedOnce
			}
			return nil
		}}
	}).UID("count-a")
	dirA := filepath.Join(t.TempDir(), "out-a")
	weir.SinkToTransactional(outA, fileSink(dirA)).UID("out-a")

	b := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(nB), datagen.WithRate(rateB))).UID("source-b")
	outB := weir.Process(weir.KeyBy(b, func(v int64) int64 { return v % keys }), func() weir.KeyedProcessFunction[int64, int64, string] {
		return &counting{tag: "b", opened: openB.opened, fail: func(int64) error {
			seenB.Add(1)
			return nil
		}}
	}).UID("count-b")
	dirB := filepath.Join(t.TempDir(), "out-b")
	weir.SinkToTransactional(outB, fileSink(dirB)).UID("out-b")

	if err := env.Execute(context.Background(), "regions"); err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", err, log)
	}
	if !failed.Load() {
		t.Fatal("the failure in pipeline A never fired")
	}
	if got := hooks.Plan(env).Status.Restarts.Load(); got != 1 {
		t.Errorf("%d restarts, want 1", got)
	}
	if got, m := openA.opens.Load(), openA.maxAttempt.Load(); got != 2*p || m != 1 {
		t.Errorf("pipeline A's keyed function opened %d times up to attempt %d, want %d up to attempt 1 (restarted once)", got, m, 2*p)
	}
	if got, m := openB.opens.Load(), openB.maxAttempt.Load(); got != p || m != 0 {
		t.Errorf("pipeline B's keyed function opened %d times up to attempt %d, want %d at attempt 0: B was restarted with A", got, m, p)
	}
	moved := atRestart.Load() - atFailure.Load()
	t.Logf("B processed %d records between A's failure and its restart", moved)
	if atRestart.Load() < 0 || moved < minMoved {
		t.Errorf("B processed %d records while A waited to restart (at failure %d, at restart %d), want at least %d", moved, atFailure.Load(), atRestart.Load(), minMoved)
	}
	sameMultiset(t, runningCounts("a", nA, keys), committed(t, dirA))
	sameMultiset(t, runningCounts("b", nB, keys), committed(t, dirB))
}

// TestOneRegionRestartsWhole runs one pipeline whose keyed stages are
// joined by hash edges, so the whole job is one region: a failure in the
// last stage restarts the first stage too, exactly as before regions
// existed, and the output is exact.
func TestOneRegionRestartsWhole(t *testing.T) {
	const (
		p      = 2
		n      = 40_000
		keys   = 5
		failAt = 15_000
	)
	env, log := newEnv(testConfig(t, p, "20ms"))
	var first, second openCounter
	var failed atomic.Bool
	var seen atomic.Int64
	src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(n))).UID("source")
	counted := weir.Process(weir.KeyBy(src, func(v int64) int64 { return v % keys }), func() weir.KeyedProcessFunction[int64, int64, string] {
		return &counting{tag: "c", opened: first.opened}
	}).UID("count")
	// Re-key the lines by their key and pass them through a second keyed
	// stage that fails once.
	again := weir.Process(weir.KeyBy(counted, func(s string) int64 { return int64(len(s)) % keys }), func() weir.KeyedProcessFunction[int64, string, string] {
		return &passThrough{opened: second.opened, fail: func() error {
			if failed.Load() {
				return nil
			}
			if seen.Add(1) == failAt && failed.CompareAndSwap(false, true) {
				return errInjectedOnce
			}
			return nil
		}}
	}).UID("pass")
	dir := filepath.Join(t.TempDir(), "out")
	weir.SinkToTransactional(again, fileSink(dir)).UID("out")
	execute(t, env, log)
	if !failed.Load() {
		t.Fatal("the failure never fired")
	}
	if got := hooks.Plan(env).Status.Restarts.Load(); got != 1 {
		t.Errorf("%d restarts, want 1", got)
	}
	if got := first.opens.Load(); got != 2*p {
		t.Errorf("the first keyed stage opened %d times, want %d: one region restarts as a whole", got, 2*p)
	}
	if got := second.opens.Load(); got != 2*p {
		t.Errorf("the failing stage opened %d times, want %d", got, 2*p)
	}
	sameMultiset(t, runningCounts("c", n, keys), committed(t, dir))
}

// passThrough emits its input and fails when fail says so.
type passThrough struct {
	opened func(attempt int)
	fail   func() error
}

func (p *passThrough) Open(ctx context.Context, kc *weir.KeyedContext[int64]) error {
	p.opened(kc.Attempt())
	return nil
}

func (p *passThrough) ProcessElement(s string, _ *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	if err := p.fail(); err != nil {
		return err
	}
	out.Collect(s)
	return nil
}

// fileSink is an exactly-once file sink of lines into dir.
func fileSink(dir string) func() weir.TwoPhaseCommitSink[string, file.Txn] {
	return file.ExactlyOnce(dir, func(v string, dst []byte) []byte { return append(dst, v...) })
}
