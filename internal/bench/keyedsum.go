package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/keyedsum"
)

// benchResult is what `weir bench keyed-sum --json` prints.
type benchResult struct {
	Benchmark             string  `json:"benchmark"`
	Records               int64   `json:"records"`
	Keys                  int64   `json:"keys"`
	Parallelism           int     `json:"parallelism"`
	CheckpointInterval    string  `json:"checkpoint_interval"`
	Runs                  int     `json:"runs"`
	RecordsPerSec         float64 `json:"records_per_sec"`
	BaselineRecordsPerSec float64 `json:"baseline_records_per_sec"`
	Ratio                 float64 `json:"ratio"`
	CompletedCheckpoints  int64   `json:"completed_checkpoints"`
	// With a checkpoint interval, the engine also runs without checkpoints
	// in the same rounds; overhead = 1 - with/without.
	NoCheckpointRecordsPerSec float64 `json:"no_checkpoint_records_per_sec,omitempty"`
	CheckpointOverhead        float64 `json:"checkpoint_overhead,omitempty"`
	EngineSeconds             float64 `json:"engine_seconds"`
	BaselineSeconds           float64 `json:"baseline_seconds"`
	// StateBackend is present with --memory or a backend other than heap,
	// so that the output of the bench's earlier flags stays as it was.
	StateBackend string `json:"state_backend,omitempty"`
	// The memory figures, present with --memory (keyedsum_memory.go).
	*keyedSumMemory
}

func newKeyedSumBench() *cobra.Command {
	var (
		o          keyedSumOpts
		keys       keyList = keyList{1000}
		interval   string
		asJSON     bool
		cpuProfile string
		childMode  string
	)
	c := &cobra.Command{
		Use:   "keyed-sum",
		Short: "The demo's computation without the file sink, against a hand-written loop in the same run",
		Long: `keyed-sum runs the demo job's generation and per-account count+sum on the
engine (sources -> hash partition by account -> keyed aggregation with heap
state -> a discarding sink) and, in the same process, a single-goroutine
loop doing the same generation and aggregation in a Go map. Runs alternate
engine and baseline; the median of each is reported, and the ratio is
engine throughput / baseline throughput. With --checkpoint-interval, each
round also runs the engine without checkpoints, and the overhead of
checkpointing is reported against that same-run figure.

--keys takes a list (--keys 1000,1000000,10000000): the bench then runs once
per key count, in order, and prints one result per key count (with --json
one JSON object per line) and, without --json, a table of all of them.

With --memory, each key count is also run in child processes of this binary,
the engine and the loop each in its own, after the throughput rounds (which
stay in this process, as without --memory): bytes per key of each from its
peak RSS over its RSS at start, and from its Go live heap after a GC at the
end of input over the same at start (BENCHMARKS.md, "keyed-sum: cost as keys
grow", lists the JSON fields). --runs 0 with --memory skips the throughput
rounds. --state-backend lsm also reports the stores' configured memory bound.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			d, err := config.ParseDuration(interval)
			if err != nil {
				return usagef("--checkpoint-interval %q: %v", interval, err)
			}
			o.interval = d
			if o.backend != config.BackendHeap && o.backend != config.BackendLSM {
				return usagef("--state-backend %q: want %s or %s", o.backend, config.BackendHeap, config.BackendLSM)
			}
			if childMode != "" {
				if len(keys) != 1 {
					return usagef("--child-mode runs one key count, not %d", len(keys))
				}
				return runKeyedSumChild(c.Context(), o, keys[0], childMode)
			}
			minRuns := 1
			if o.memory {
				minRuns = 0
			}
			if o.records < 1 || o.parallelism < 1 || o.runs < minRuns || o.memoryRuns < 1 {
				return usagef("--records, --keys, --parallelism, --runs and --memory-runs must be at least 1 (--runs may be 0 with --memory)")
			}
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			var all []benchResult
			for _, k := range keys {
				res, err := o.run(c.Context(), k)
				if err != nil {
					return err
				}
				all = append(all, res)
				if asJSON {
					if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
						return err
					}
					continue
				}
				printKeyedSum(res)
			}
			if !asJSON && len(all) > 1 {
				printKeyedSumSweep(all)
			}
			return nil
		},
	}
	fs := c.Flags()
	fs.Int64Var(&o.records, "records", 20_000_000, "events to process")
	fs.Var(&keys, "keys", "accounts; a comma-separated list runs the bench once per key count")
	fs.IntVarP(&o.parallelism, "parallelism", "p", 2, "parallelism of the engine job")
	fs.StringVar(&interval, "checkpoint-interval", "0", "checkpoint interval; 0 = no checkpoints")
	fs.IntVar(&o.runs, "runs", 3, "alternating engine/baseline runs; medians are reported")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object (one per line and key count with a --keys list)")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of all runs (engine and baseline) to this file")
	fs.StringVar(&o.backend, "state-backend", config.BackendHeap, "keyed state backend of the engine: heap or lsm")
	fs.StringArrayVarP(&o.defines, "define", "D", nil, "configuration override key=value for every engine run (repeatable), e.g. -D state.backend.lsm.block-cache-size=256mb")
	fs.BoolVar(&o.memory, "memory", false, "also measure memory: the engine and the loop each in its own child process, after the throughput rounds")
	fs.IntVar(&o.memoryRuns, "memory-runs", 1, "with --memory, alternating engine/loop child processes per key count; field-wise medians are reported")
	fs.StringVar(&o.memProfile, "memprofile", "", "with --memory, write each child's heap profile (after a GC at the end of input) to <this>-engine-<keys>.pprof and <this>-baseline-<keys>.pprof")
	fs.StringVar(&childMode, "child-mode", "", "run one memory child (engine or baseline) and print its result line (used by the bench itself)")
	_ = fs.MarkHidden("child-mode")
	return c
}

// keyedSumOpts are the flags of one invocation, for every key count.
type keyedSumOpts struct {
	records     int64
	parallelism int
	interval    time.Duration
	runs        int
	backend     string
	defines     []string
	memory      bool
	memoryRuns  int
	memProfile  string
}

// run measures one key count: the throughput rounds in this process, then,
// with --memory, the memory children.
func (o keyedSumOpts) run(ctx context.Context, keys int64) (benchResult, error) {
	res := benchResult{
		Benchmark: "keyed-sum", Records: o.records, Keys: keys, Parallelism: o.parallelism,
		CheckpointInterval: o.interval.String(), Runs: o.runs,
	}
	if o.memory || o.backend != config.BackendHeap {
		res.StateBackend = o.backend
	}
	if o.runs > 0 {
		if err := o.throughput(&res); err != nil {
			return res, err
		}
	}
	if o.memory {
		m, err := o.measureMemory(ctx, keys)
		if err != nil {
			return res, err
		}
		res.keyedSumMemory = &m
	}
	return res, nil
}

// throughput runs the alternating rounds and fills the throughput fields.
func (o keyedSumOpts) throughput(res *benchResult) error {
	records, keys, d := o.records, res.Keys, o.interval
	var engine, base, plain []time.Duration
	var checkpoints int64
	var sink int64
	for r := 0; r < o.runs; r++ {
		el, cp, err := o.runEngineKeyedSum(keys, d)
		if err != nil {
			return err
		}
		engine = append(engine, el)
		checkpoints = cp
		if d > 0 {
			el, _, err := o.runEngineKeyedSum(keys, 0)
			if err != nil {
				return err
			}
			plain = append(plain, el)
		}
		t0 := time.Now()
		sink += baselineKeyedSum(records, keys)
		base = append(base, time.Since(t0))
	}
	_ = sink
	res.CompletedCheckpoints = checkpoints
	res.EngineSeconds, res.BaselineSeconds = median(engine).Seconds(), median(base).Seconds()
	res.RecordsPerSec = float64(records) / res.EngineSeconds
	res.BaselineRecordsPerSec = float64(records) / res.BaselineSeconds
	res.Ratio = res.RecordsPerSec / res.BaselineRecordsPerSec
	if len(plain) > 0 {
		res.NoCheckpointRecordsPerSec = float64(records) / median(plain).Seconds()
		res.CheckpointOverhead = 1 - res.RecordsPerSec/res.NoCheckpointRecordsPerSec
	}
	return nil
}

// printKeyedSum prints one key count's lines; the throughput lines are
// those of the bench before --memory existed.
func printKeyedSum(res benchResult) {
	if res.Runs > 0 {
		d := res.CheckpointInterval
		fmt.Printf("keyed-sum  records=%d keys=%d parallelism=%d checkpoint-interval=%s runs=%d\n", res.Records, res.Keys, res.Parallelism, d, res.Runs)
		fmt.Printf("  engine    %12.0f records/s  (median %.3fs, %d checkpoints in the last run)\n", res.RecordsPerSec, res.EngineSeconds, res.CompletedCheckpoints)
		fmt.Printf("  baseline  %12.0f records/s  (median %.3fs, one goroutine, Go map)\n", res.BaselineRecordsPerSec, res.BaselineSeconds)
		fmt.Printf("  ratio     %.3f\n", res.Ratio)
		if res.NoCheckpointRecordsPerSec > 0 {
			fmt.Printf("  engine without checkpoints %12.0f records/s in the same rounds: checkpoint overhead %.1f%%\n", res.NoCheckpointRecordsPerSec, 100*res.CheckpointOverhead)
		}
	}
	if res.keyedSumMemory != nil {
		printKeyedSumMemory(res)
	}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// baselineKeyedSum is the hand-written loop: generate event i, update the
// account's count and total in a map, produce the same result tuple. The
// returned checksum keeps the compiler from dropping the work.
func baselineKeyedSum(n, k int64) int64 { return baselineKeyedSumAt(n, k, func() {}) }

func (o keyedSumOpts) runEngineKeyedSum(k int64, interval time.Duration) (time.Duration, int64, error) {
	n := o.records
	dir, err := os.MkdirTemp("", "weir-bench-*")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	env, err := o.engineEnv(dir, interval)
	if err != nil {
		return 0, 0, err
	}
	var seen atomic.Int64
	keyedsum.Build(env, keyedsum.Options{Records: n, Keys: k, Seen: &seen, SinkName: "discard"})
	t0 := time.Now()
	if err := env.Execute(context.Background(), "keyed-sum"); err != nil {
		return 0, 0, err
	}
	el := time.Since(t0)
	if got := seen.Load(); got != n {
		return 0, 0, fmt.Errorf("engine emitted %d results for %d events", got, n)
	}
	return el, hooks.Plan(env).Status.CompletedCheckpoints.Load(), nil
}

// engineEnv is the engine's configuration of every run: the parallelism,
// the interval, the state backend (an lsm store under dir) and the -D
// overrides, which come last.
func (o keyedSumOpts) engineEnv(dir string, interval time.Duration) (*weir.Env, error) {
	cfg, err := o.engineConfig(dir, interval)
	if err != nil {
		return nil, err
	}
	if o.backend == config.BackendLSM {
		if err := os.MkdirAll(filepath.Join(dir, "lsm"), 0o755); err != nil {
			return nil, fmt.Errorf("keyed-sum: the lsm store folder: %w", err)
		}
	}
	return weir.NewEnv(weir.WithConfig(cfg)), nil
}

func (o keyedSumOpts) engineConfig(dir string, interval time.Duration) (*weir.Config, error) {
	cfg := weir.NewConfig()
	set := map[string]string{
		config.ParallelismDefault:    fmt.Sprint(o.parallelism),
		config.CheckpointingInterval: fmt.Sprintf("%dms", interval.Milliseconds()),
		config.CheckpointsDir:        filepath.Join(dir, "checkpoints"),
	}
	if o.backend != "" && o.backend != config.BackendHeap {
		set[config.StateBackendType] = o.backend
		set[config.StateBackendLSMDir] = filepath.Join(dir, "lsm")
	}
	for key, v := range set {
		if err := cfg.Set(key, v); err != nil {
			return nil, fmt.Errorf("keyed-sum: set %s: %w", key, err)
		}
	}
	if err := hooks.Config(cfg).SetOverrides(o.defines); err != nil {
		return nil, usagef("-D: %v", err)
	}
	return cfg, nil
}
