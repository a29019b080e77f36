package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
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
}

func newKeyedSumBench() *cobra.Command {
	var (
		records     int64
		keys        int64
		parallelism int
		interval    string
		runs        int
		asJSON      bool
		cpuProfile  string
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
checkpointing is reported against that same-run figure.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if records < 1 || keys < 1 || parallelism < 1 || runs < 1 {
				return usagef("--records, --keys, --parallelism and --runs must be at least 1")
			}
			d, err := config.ParseDuration(interval)
			if err != nil {
				return usagef("--checkpoint-interval %q: %v", interval, err)
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return usagef("--cpuprofile: %v", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			var engine, base, plain []time.Duration
			var checkpoints int64
			var sink int64
			for r := 0; r < runs; r++ {
				el, cp, err := runEngineKeyedSum(records, keys, parallelism, d)
				if err != nil {
					return err
				}
				engine = append(engine, el)
				checkpoints = cp
				if d > 0 {
					el, _, err := runEngineKeyedSum(records, keys, parallelism, 0)
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
			res := benchResult{
				Benchmark: "keyed-sum", Records: records, Keys: keys, Parallelism: parallelism,
				CheckpointInterval: d.String(), Runs: runs, CompletedCheckpoints: checkpoints,
				EngineSeconds: median(engine).Seconds(), BaselineSeconds: median(base).Seconds(),
			}
			res.RecordsPerSec = float64(records) / res.EngineSeconds
			res.BaselineRecordsPerSec = float64(records) / res.BaselineSeconds
			res.Ratio = res.RecordsPerSec / res.BaselineRecordsPerSec
			if len(plain) > 0 {
				res.NoCheckpointRecordsPerSec = float64(records) / median(plain).Seconds()
				res.CheckpointOverhead = 1 - res.RecordsPerSec/res.NoCheckpointRecordsPerSec
			}
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(res)
			}
			fmt.Printf("keyed-sum  records=%d keys=%d parallelism=%d checkpoint-interval=%s runs=%d\n", records, keys, parallelism, d, runs)
			fmt.Printf("  engine    %12.0f records/s  (median %.3fs, %d checkpoints in the last run)\n", res.RecordsPerSec, res.EngineSeconds, checkpoints)
			fmt.Printf("  baseline  %12.0f records/s  (median %.3fs, one goroutine, Go map)\n", res.BaselineRecordsPerSec, res.BaselineSeconds)
			fmt.Printf("  ratio     %.3f\n", res.Ratio)
			if len(plain) > 0 {
				fmt.Printf("  engine without checkpoints %12.0f records/s in the same rounds: checkpoint overhead %.1f%%\n", res.NoCheckpointRecordsPerSec, 100*res.CheckpointOverhead)
			}
			return nil
		},
	}
	fs := c.Flags()
	fs.Int64Var(&records, "records", 20_000_000, "events to process")
	fs.Int64Var(&keys, "keys", 1000, "accounts")
	fs.IntVarP(&parallelism, "parallelism", "p", 2, "parallelism of the engine job")
	fs.StringVar(&interval, "checkpoint-interval", "0", "checkpoint interval; 0 = no checkpoints")
	fs.IntVar(&runs, "runs", 3, "alternating engine/baseline runs; medians are reported")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of all runs (engine and baseline) to this file")
	return c
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// baselineKeyedSum is the hand-written loop: generate event i, update the
// account's count and total in a map, produce the same result tuple. The
// returned checksum keeps the compiler from dropping the work.
func baselineKeyedSum(n, k int64) int64 {
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
	return sum
}

func runEngineKeyedSum(n, k int64, p int, interval time.Duration) (time.Duration, int64, error) {
	dir, err := os.MkdirTemp("", "weir-bench-*")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	cfg := weir.NewConfig()
	for key, v := range map[string]string{
		config.ParallelismDefault:    fmt.Sprint(p),
		config.CheckpointingInterval: fmt.Sprintf("%dms", interval.Milliseconds()),
		config.CheckpointsDir:        dir,
	} {
		if err := cfg.Set(key, v); err != nil {
			return 0, 0, err
		}
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
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
