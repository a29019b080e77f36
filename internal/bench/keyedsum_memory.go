package bench

// keyed-sum --memory: what a key's state costs, engine against the loop.
// Each is run in a child process of its own (--child-mode engine|baseline)
// so that its peak RSS is its own: in one process the second to run would
// inherit the first's heap and high-water mark. The throughput rounds stay
// in the parent, as without --memory, so the ratio is not changed by them.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/plan"
	"github.com/weirstream/weir/internal/state/lsm"
)

// Memory child roles.
const (
	memChildEngine   = "engine"
	memChildBaseline = "baseline"
)

// keyedSumMemory is what --memory adds to a key count's JSON object. RSS
// figures are VmHWM/VmRSS of /proc/self/status of the child; live heap
// figures are runtime/metrics /gc/heap/live:bytes right after a
// runtime.GC(), taken at the child's start and at the end of input (the
// loop: after its last record, its map still referenced; the engine: when
// every sink subtask has reached its Close, the keyed state still held by
// the aggregating tasks). Per-key figures divide by state_keys.
type keyedSumMemory struct {
	MemoryRuns int `json:"memory_runs"`
	// StateKeys is the number of keys that get state: min(keys, records).
	StateKeys int64 `json:"state_keys"`
	// GOGC is the children's GOGC ("" = the default, 100); the RSS figures
	// include the heap growth it allows, the live heap ones do not.
	GOGC string `json:"gogc"`

	EngineStartRSSBytes int64 `json:"engine_start_rss_bytes"`
	EnginePeakRSSBytes  int64 `json:"engine_peak_rss_bytes"`
	// EngineBytesPerKey is (peak RSS - start RSS) / state_keys.
	EngineBytesPerKey         float64 `json:"engine_bytes_per_key"`
	EngineLiveHeapBytes       int64   `json:"engine_live_heap_bytes"` // end - start
	EngineLiveHeapBytesPerKey float64 `json:"engine_live_heap_bytes_per_key"`
	EngineMemorySeconds       float64 `json:"engine_memory_run_seconds"`
	EngineMemoryCheckpoints   int64   `json:"engine_memory_checkpoints"`

	BaselineStartRSSBytes       int64   `json:"baseline_start_rss_bytes"`
	BaselinePeakRSSBytes        int64   `json:"baseline_peak_rss_bytes"`
	BaselineBytesPerKey         float64 `json:"baseline_bytes_per_key"`
	BaselineLiveHeapBytes       int64   `json:"baseline_live_heap_bytes"`
	BaselineLiveHeapBytesPerKey float64 `json:"baseline_live_heap_bytes_per_key"`
	BaselineMemorySeconds       float64 `json:"baseline_memory_run_seconds"`

	// Where the peak RSS goes, per child: the peaks of the Go heap's
	// objects (live and not yet swept garbage) and of the GC's heap goal,
	// sampled every 20 ms, the bytes allocated per record (garbage that
	// the heap must hold until a GC) and the GC cycles of the run.
	EnginePeakHeapObjectsBytes int64   `json:"engine_peak_heap_objects_bytes"`
	EnginePeakHeapGoalBytes    int64   `json:"engine_peak_heap_goal_bytes"`
	EnginePeakGoTotalBytes     int64   `json:"engine_peak_go_total_bytes"`
	EngineAllocBytesPerRecord  float64 `json:"engine_alloc_bytes_per_record"`
	EngineGCCycles             int64   `json:"engine_gc_cycles"`
	// The engine's peaks when its last result came out, before its final
	// checkpoint serialized the state: (VmHWM then - start) / state_keys.
	EngineLastRecordBytesPerKey          float64 `json:"engine_last_record_bytes_per_key"`
	EngineLastRecordPeakHeapObjectsBytes int64   `json:"engine_last_record_peak_heap_objects_bytes"`
	BaselinePeakHeapObjectsBytes         int64   `json:"baseline_peak_heap_objects_bytes"`
	BaselinePeakHeapGoalBytes            int64   `json:"baseline_peak_heap_goal_bytes"`
	BaselinePeakGoTotalBytes             int64   `json:"baseline_peak_go_total_bytes"`
	BaselineAllocBytesPerRecord          float64 `json:"baseline_alloc_bytes_per_record"`
	BaselineGCCycles                     int64   `json:"baseline_gc_cycles"`

	// BytesPerKeyRatio is engine / baseline bytes per key (RSS);
	// LiveHeapRatio the same of the live heap.
	BytesPerKeyRatio float64 `json:"bytes_per_key_ratio"`
	LiveHeapRatio    float64 `json:"live_heap_ratio"`

	// LSMMemoryBoundBytes (lsm only) is the configured bound of the
	// stores, lsm.Options.MemoryBound times the parallelism (one store per
	// keyed subtask): block cache plus memtables. Go values, iterators and
	// the engine's own buffers come on top of it.
	LSMMemoryBoundBytes int64 `json:"lsm_memory_bound_bytes,omitempty"`
	// EngineRSSOverLSMBound is (peak RSS - start RSS) / that bound.
	EngineRSSOverLSMBound float64 `json:"engine_rss_over_lsm_bound,omitempty"`
}

// keyedSumChildResult is the one line a memory child prints.
type keyedSumChildResult struct {
	Role               string  `json:"role"`
	StartRSSBytes      int64   `json:"start_rss_bytes"`
	EndRSSBytes        int64   `json:"end_rss_bytes"` // VmRSS at the end-of-input measurement
	PeakRSSBytes       int64   `json:"peak_rss_bytes"`
	StartLiveHeapBytes int64   `json:"start_live_heap_bytes"`
	EndLiveHeapBytes   int64   `json:"end_live_heap_bytes"`
	Seconds            float64 `json:"seconds"`
	Checkpoints        int64   `json:"checkpoints"`
	// Sampled every memSampleEvery from start to the end of input.
	PeakHeapObjectsBytes int64 `json:"peak_heap_objects_bytes"` // live + not yet swept
	PeakHeapGoalBytes    int64 `json:"peak_heap_goal_bytes"`
	PeakGoTotalBytes     int64 `json:"peak_go_total_bytes"` // all the runtime holds, less what it returned
	AllocBytes           int64 `json:"alloc_bytes"`         // allocated from start to the end of input
	// When the last result came out (the engine's final checkpoint and
	// end-of-input measurement come after).
	LastRecordPeakRSSBytes         int64 `json:"last_record_peak_rss_bytes"`
	LastRecordPeakHeapObjectsBytes int64 `json:"last_record_peak_heap_objects_bytes"`
	GCCycles                       int64 `json:"gc_cycles"`
}

// measureMemory runs the memory children of one key count, alternating
// engine and loop, and combines them field by field (medians).
func (o keyedSumOpts) measureMemory(ctx context.Context, keys int64) (keyedSumMemory, error) {
	var eng, base []keyedSumChildResult
	for r := 0; r < o.memoryRuns; r++ {
		profile := func(role string) string {
			if o.memProfile == "" || r > 0 {
				return ""
			}
			return fmt.Sprintf("%s-%s-%d.pprof", o.memProfile, role, keys)
		}
		e, err := o.runMemoryChild(ctx, keys, memChildEngine, profile(memChildEngine))
		if err != nil {
			return keyedSumMemory{}, err
		}
		b, err := o.runMemoryChild(ctx, keys, memChildBaseline, profile(memChildBaseline))
		if err != nil {
			return keyedSumMemory{}, err
		}
		eng, base = append(eng, e), append(base, b)
	}
	m := keyedSumMemory{MemoryRuns: o.memoryRuns, StateKeys: min(keys, o.records), GOGC: os.Getenv("GOGC")}
	med := func(rs []keyedSumChildResult, f func(keyedSumChildResult) int64) int64 {
		v := make([]int64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return medianInt64(v)
	}
	perKey := func(n int64) float64 { return float64(n) / float64(m.StateKeys) }
	secs := func(rs []keyedSumChildResult) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = r.Seconds
		}
		return medianFloat(v)
	}
	peak := func(r keyedSumChildResult) int64 { return r.PeakRSSBytes }
	start := func(r keyedSumChildResult) int64 { return r.StartRSSBytes }
	growth := func(r keyedSumChildResult) int64 { return r.PeakRSSBytes - r.StartRSSBytes }
	live := func(r keyedSumChildResult) int64 { return r.EndLiveHeapBytes - r.StartLiveHeapBytes }

	m.EngineStartRSSBytes, m.EnginePeakRSSBytes = med(eng, start), med(eng, peak)
	m.EngineBytesPerKey = perKey(med(eng, growth))
	m.EngineLiveHeapBytes = med(eng, live)
	m.EngineLiveHeapBytesPerKey = perKey(m.EngineLiveHeapBytes)
	m.EngineMemorySeconds = secs(eng)
	m.EngineMemoryCheckpoints = med(eng, func(r keyedSumChildResult) int64 { return r.Checkpoints })

	m.BaselineStartRSSBytes, m.BaselinePeakRSSBytes = med(base, start), med(base, peak)
	m.BaselineBytesPerKey = perKey(med(base, growth))
	m.BaselineLiveHeapBytes = med(base, live)
	m.BaselineLiveHeapBytesPerKey = perKey(m.BaselineLiveHeapBytes)
	m.BaselineMemorySeconds = secs(base)

	perRecord := func(n int64) float64 { return float64(n) / float64(o.records) }
	m.EnginePeakHeapObjectsBytes = med(eng, func(r keyedSumChildResult) int64 { return r.PeakHeapObjectsBytes })
	m.EnginePeakHeapGoalBytes = med(eng, func(r keyedSumChildResult) int64 { return r.PeakHeapGoalBytes })
	m.EnginePeakGoTotalBytes = med(eng, func(r keyedSumChildResult) int64 { return r.PeakGoTotalBytes })
	m.EngineAllocBytesPerRecord = perRecord(med(eng, func(r keyedSumChildResult) int64 { return r.AllocBytes }))
	m.EngineGCCycles = med(eng, func(r keyedSumChildResult) int64 { return r.GCCycles })
	m.EngineLastRecordBytesPerKey = perKey(med(eng, func(r keyedSumChildResult) int64 { return r.LastRecordPeakRSSBytes - r.StartRSSBytes }))
	m.EngineLastRecordPeakHeapObjectsBytes = med(eng, func(r keyedSumChildResult) int64 { return r.LastRecordPeakHeapObjectsBytes })
	m.BaselinePeakHeapObjectsBytes = med(base, func(r keyedSumChildResult) int64 { return r.PeakHeapObjectsBytes })
	m.BaselinePeakHeapGoalBytes = med(base, func(r keyedSumChildResult) int64 { return r.PeakHeapGoalBytes })
	m.BaselinePeakGoTotalBytes = med(base, func(r keyedSumChildResult) int64 { return r.PeakGoTotalBytes })
	m.BaselineAllocBytesPerRecord = perRecord(med(base, func(r keyedSumChildResult) int64 { return r.AllocBytes }))
	m.BaselineGCCycles = med(base, func(r keyedSumChildResult) int64 { return r.GCCycles })

	m.BytesPerKeyRatio = ratio(m.EngineBytesPerKey, m.BaselineBytesPerKey)
	m.LiveHeapRatio = ratio(m.EngineLiveHeapBytesPerKey, m.BaselineLiveHeapBytesPerKey)
	if o.backend == config.BackendLSM {
		bound, err := o.lsmMemoryBound()
		if err != nil {
			return m, err
		}
		m.LSMMemoryBoundBytes = bound
		m.EngineRSSOverLSMBound = ratio(float64(med(eng, growth)), float64(bound))
	}
	return m, nil
}

// lsmMemoryBound is the stores' configured bound, from the same
// configuration (with -D) the engine runs with.
func (o keyedSumOpts) lsmMemoryBound() (int64, error) {
	cfg, err := o.engineConfig(os.TempDir(), o.interval)
	if err != nil {
		return 0, err
	}
	per := lsm.FromConfig(plan.LSMConfig(hooks.Config(cfg)), "", nil).MemoryBound()
	return per * int64(o.parallelism), nil
}

// runMemoryChild re-executes this binary as one memory child and parses
// the line it prints.
func (o keyedSumOpts) runMemoryChild(ctx context.Context, keys int64, role, profile string) (keyedSumChildResult, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	exe, err := os.Executable()
	if err != nil {
		return keyedSumChildResult{}, fmt.Errorf("bench keyed-sum: find own binary to run the %s memory child: %w", role, err)
	}
	args := []string{"bench", "keyed-sum", "--records", fmt.Sprint(o.records), "--keys", fmt.Sprint(keys),
		"--parallelism", fmt.Sprint(o.parallelism), "--checkpoint-interval", fmt.Sprintf("%dms", o.interval.Milliseconds()),
		"--state-backend", o.backend, "--child-mode", role}
	for _, d := range o.defines {
		args = append(args, "-D", d)
	}
	if profile != "" {
		args = append(args, "--memprofile", profile)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return keyedSumChildResult{}, fmt.Errorf("bench keyed-sum: %s memory child (%d keys): %w; its stderr:\n%s", role, keys, err, tailString(stderr.String(), 4000))
	}
	var r keyedSumChildResult
	line := lastOutputLine(stdout.String())
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.Role != role {
		return keyedSumChildResult{}, fmt.Errorf("bench keyed-sum: %s memory child printed %q, not its result (%v)", role, line, err)
	}
	return r, nil
}

// printKeyedSumMemory prints the memory lines of one key count.
func printKeyedSumMemory(res benchResult) {
	m := res.keyedSumMemory
	gogc := m.GOGC
	if gogc == "" {
		gogc = "100 (default)"
	}
	fmt.Printf("keyed-sum memory  records=%d keys=%d (with state: %d) parallelism=%d checkpoint-interval=%s state-backend=%s memory-runs=%d GOGC=%s\n",
		res.Records, res.Keys, m.StateKeys, res.Parallelism, res.CheckpointInterval, res.StateBackend, m.MemoryRuns, gogc)
	fmt.Printf("  engine    peak RSS %10s (start %s): %6.1f B/key; live heap after GC %6.1f B/key; %.1fs, %d checkpoints (own child process)\n",
		bytes(m.EnginePeakRSSBytes), bytes(m.EngineStartRSSBytes), m.EngineBytesPerKey, m.EngineLiveHeapBytesPerKey, m.EngineMemorySeconds, m.EngineMemoryCheckpoints)
	fmt.Printf("  baseline  peak RSS %10s (start %s): %6.1f B/key; live heap after GC %6.1f B/key; %.1fs (own child process)\n",
		bytes(m.BaselinePeakRSSBytes), bytes(m.BaselineStartRSSBytes), m.BaselineBytesPerKey, m.BaselineLiveHeapBytesPerKey, m.BaselineMemorySeconds)
	fmt.Printf("  engine at its last result (before the final checkpoint): %6.1f B/key, heap objects peak %s\n",
		m.EngineLastRecordBytesPerKey, bytes(m.EngineLastRecordPeakHeapObjectsBytes))
	fmt.Printf("  go heap peaks    engine objects %s, goal %s, runtime total %s; %.1f B allocated/record, %d GCs\n",
		bytes(m.EnginePeakHeapObjectsBytes), bytes(m.EnginePeakHeapGoalBytes), bytes(m.EnginePeakGoTotalBytes), m.EngineAllocBytesPerRecord, m.EngineGCCycles)
	fmt.Printf("                   baseline objects %s, goal %s, runtime total %s; %.1f B allocated/record, %d GCs\n",
		bytes(m.BaselinePeakHeapObjectsBytes), bytes(m.BaselinePeakHeapGoalBytes), bytes(m.BaselinePeakGoTotalBytes), m.BaselineAllocBytesPerRecord, m.BaselineGCCycles)
	fmt.Printf("  engine/baseline  RSS per key %.2f, live heap per key %.2f\n", m.BytesPerKeyRatio, m.LiveHeapRatio)
	if m.LSMMemoryBoundBytes > 0 {
		fmt.Printf("  lsm bound %s (block cache + memtables, %d stores): engine RSS growth is %.2f of it\n",
			bytes(m.LSMMemoryBoundBytes), res.Parallelism, m.EngineRSSOverLSMBound)
	}
}
