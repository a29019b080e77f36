package bench

// The memory children of keyed-sum --memory: one runs the engine job, the
// other the hand-written loop, each measuring itself at its start and at
// the end of input (keyedsum_memory.go says what is measured).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// endOfInputWait bounds how long the first sink subtask at its end of input
// waits for the others; past it the measurement would not see them all.
const endOfInputWait = 30 * time.Minute

// memProbe takes one child's measurements.
type memProbe struct {
	r       keyedSumChildResult
	profile string // heap profile written at the end of input, if set

	allocs0, cycles0 int64 // at start
	mu               sync.Mutex
	stop, stopped    chan struct{}
}

// readMetric reads one uint64 metric of runtime/metrics, 0 if absent.
func readMetric(name string) int64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// liveHeap is the heap the last GC found live.
func liveHeap() int64 { return readMetric("/gc/heap/live:bytes") }

// memSampleEvery is how often a child samples the Go heap for its peaks.
const memSampleEvery = 20 * time.Millisecond

// start measures before any state exists and starts sampling the peaks
// of the Go heap, which say how much of the peak RSS is heap the GC had
// not yet reclaimed (garbage and headroom) rather than live state.
func (p *memProbe) start() {
	runtime.GC()
	p.r.StartLiveHeapBytes = liveHeap()
	p.r.StartRSSBytes = procStatusBytes("VmRSS")
	p.allocs0 = readMetric("/gc/heap/allocs:bytes")
	p.cycles0 = readMetric("/gc/cycles/total:gc-cycles")
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(memSampleEvery)
		defer t.Stop()
		for {
			p.sample()
			select {
			case <-t.C:
			case <-p.stop:
				return
			}
		}
	}()
}

func (p *memProbe) sample() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.r.PeakHeapObjectsBytes = max(p.r.PeakHeapObjectsBytes, readMetric("/memory/classes/heap/objects:bytes"))
	p.r.PeakHeapGoalBytes = max(p.r.PeakHeapGoalBytes, readMetric("/gc/heap/goal:bytes"))
	p.r.PeakGoTotalBytes = max(p.r.PeakGoTotalBytes, readMetric("/memory/classes/total:bytes")-readMetric("/memory/classes/heap/released:bytes"))
}

// lastRecord takes the peaks when the last result has come out: in the
// engine, before its final checkpoint (which serializes all state) and the
// end-of-input measurement; in the loop, right before end.
func (p *memProbe) lastRecord() {
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.r.LastRecordPeakRSSBytes = max(procStatusBytes("VmHWM"), p.r.StartRSSBytes)
	p.r.LastRecordPeakHeapObjectsBytes = p.r.PeakHeapObjectsBytes
}

// end measures at the end of input, with the state still referenced.
func (p *memProbe) end() error {
	close(p.stop)
	<-p.stopped
	p.sample()
	p.r.AllocBytes = readMetric("/gc/heap/allocs:bytes") - p.allocs0
	p.r.GCCycles = readMetric("/gc/cycles/total:gc-cycles") - p.cycles0
	runtime.GC()
	p.r.EndLiveHeapBytes = liveHeap()
	p.r.EndRSSBytes = procStatusBytes("VmRSS")
	if p.profile == "" {
		return nil
	}
	f, err := os.Create(p.profile)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	defer f.Close()
	// debug=0: the gzipped proto of the last GC (just run), which
	// `go tool pprof -sample_index=inuse_space` reads.
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	return f.Close()
}

// runKeyedSumChild runs one memory child and prints its result line.
func runKeyedSumChild(ctx context.Context, o keyedSumOpts, keys int64, role string) error {
	p := &memProbe{r: keyedSumChildResult{Role: role}, profile: o.memProfile}
	t0 := time.Now()
	switch role {
	case memChildEngine:
		if err := o.engineMemoryChild(ctx, keys, p); err != nil {
			return err
		}
	case memChildBaseline:
		p.start()
		t0 = time.Now()
		var err error
		sum := baselineKeyedSumAt(o.records, keys, func() { p.lastRecord(); err = p.end() })
		if err != nil {
			return err
		}
		_ = sum
	default:
		return usagef("--child-mode %q: want %s or %s", role, memChildEngine, memChildBaseline)
	}
	p.r.Seconds = time.Since(t0).Seconds()
	// The kernel's RSS counters are batched per thread, so VmHWM may lag a
	// VmRSS read before it by a page or two; the peak is at least the
	// start.
	p.r.PeakRSSBytes = max(procStatusBytes("VmHWM"), p.r.StartRSSBytes)
	return json.NewEncoder(os.Stdout).Encode(p.r)
}

// baselineKeyedSumAt is baselineKeyedSum calling atEnd after the last
// record while its map is still live (the memory child measures there);
// the call after the loop costs the throughput baseline nothing.
func baselineKeyedSumAt(n, k int64, atEnd func()) int64 {
	type totals struct{ count, total int64 }
	m := make(map[int64]totals)
	var sum int64
	for i := int64(0); i < n; i++ {
		a := demo.Account(i, k)
		t := m[a]
		t.count++
		t.total += demo.Amount(i)
		m[a] = t
		r := demo.Result{I: i, Account: a, Count: t.count, Total: t.total}
		sum += r.Count ^ r.Total
	}
	atEnd()
	runtime.KeepAlive(m)
	return sum
}

// engineMemoryChild runs the keyed-sum job with a sink that holds every
// sink subtask in Close (its end of input) until the last one arrives,
// which then measures: all aggregating tasks have processed every record
// and none has ended, so all keyed state is still referenced.
func (o keyedSumOpts) engineMemoryChild(ctx context.Context, keys int64, p *memProbe) error {
	if ctx == nil {
		ctx = context.Background()
	}
	dir, err := os.MkdirTemp("", "weir-bench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env, err := o.engineEnv(dir, o.interval)
	if err != nil {
		return err
	}
	var seen atomic.Int64
	bar := &endOfInput{done: make(chan struct{}), measure: p.end}
	results := demo.Aggregate(env, demo.Options{Events: o.records, Keys: keys})
	weir.SinkTo(results, func() weir.Sink[demo.Result] {
		return &measuringSink{bar: bar, seen: &seen, records: o.records, last: p.lastRecord}
	}).Name("discard").UID("discard")
	p.start()
	if err := env.Execute(ctx, "keyed-sum"); err != nil {
		return err
	}
	if got := seen.Load(); got != o.records {
		return fmt.Errorf("engine emitted %d results for %d events", got, o.records)
	}
	if bar.err != nil {
		return bar.err
	}
	p.r.Checkpoints = hooks.Plan(env).Status.CompletedCheckpoints.Load()
	return nil
}

// endOfInput is the sinks' meeting point: the last of parts subtasks to
// arrive runs measure, and releases the others.
type endOfInput struct {
	mu      sync.Mutex
	parts   int
	arrived int
	done    chan struct{}
	measure func() error
	err     error // measure's; read after Execute returned
}

func (b *endOfInput) open(parallelism int) {
	b.mu.Lock()
	b.parts = parallelism
	b.mu.Unlock()
}

func (b *endOfInput) arrive(ctx context.Context) error {
	b.mu.Lock()
	b.arrived++
	last := b.arrived == b.parts
	b.mu.Unlock()
	if last {
		b.err = b.measure()
		close(b.done)
		return b.err
	}
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(endOfInputWait):
		return fmt.Errorf("keyed-sum memory child: a sink subtask waited %s for the others to reach their end of input", endOfInputWait)
	}
}

// measuringSink counts and drops results like keyed-sum's own sink, and
// meets the other subtasks at its Close.
type measuringSink struct {
	bar     *endOfInput
	seen    *atomic.Int64
	records int64  // results expected over all subtasks
	last    func() // called by the subtask that receives the last of them
	sum     int64  // keeps the results' fields live
}

func (s *measuringSink) Open(_ context.Context, rc *weir.RuntimeContext) error {
	s.bar.open(rc.Parallelism())
	return nil
}

func (s *measuringSink) Write(_ context.Context, b []demo.Result) error {
	for i := range b {
		s.sum += b[i].Count ^ b[i].Total
	}
	if s.seen.Add(int64(len(b))) == s.records {
		s.last()
	}
	return nil
}

func (s *measuringSink) Flush(context.Context) error { return nil }

func (s *measuringSink) Close(ctx context.Context) error { return s.bar.arrive(ctx) }
