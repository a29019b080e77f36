package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
)

// backpressureOptions are the parameters of bench backpressure, shared by
// parent and children.
type backpressureOptions struct {
	duration       time.Duration
	interval       time.Duration
	alignedTimeout time.Duration
	rate           float64 // records per second of all sources together
	sinkShare      float64 // the sink's rate as a share of rate
	batchSize      int
	rssBound       int64 // peak RSS allowed above the no-checkpoint baseline
}

// Targets of the issue.
const (
	unalignedTarget  = time.Second
	rssGrowthTarget  = 0.10
	defaultRSSBound  = 64 << 20
	backpressureSrcs = 2
)

func newBackpressureBench() *cobra.Command {
	var (
		o         backpressureOptions
		asJSON    bool
		childMode string
	)
	c := &cobra.Command{
		Use:   "backpressure",
		Short: "Checkpoint duration and memory of each checkpoint mode with a sink at 10% of the source rate",
		Long: `backpressure runs source (2 subtasks) -> hash -> keyed sink, the sink slowed
by CPU work (not sleeps) to 10% of the sources' rate, so the pipeline is
backpressured all the time, with checkpoints every second. Modes: aligned,
unaligned, and aligned with a 100 ms alignment timeout (aligned-timeout),
each in its own child process, plus a child without checkpoints as the
memory baseline.

Targets, printed pass/fail: the unaligned median checkpoint duration is at
most 1 s; in every mode memory stays bounded: the peak RSS grows by less
than 10% from a quarter of the run to its end, and it is within
--rss-bound of the baseline's.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.duration <= 0 || o.interval <= 0 || o.alignedTimeout <= 0 || o.rate <= 0 || o.batchSize < 1 || o.sinkShare <= 0 || o.sinkShare > 1 {
				return usagef("--duration, --interval, --aligned-timeout, --rate and --batch-size must be positive, --sink-share in (0, 1]")
			}
			if childMode != "" {
				r, err := runBackpressureMode(o, childMode)
				if err != nil {
					return err
				}
				return printChildResult(r)
			}
			args := []string{"--duration", o.duration.String(), "--interval", o.interval.String(),
				"--aligned-timeout", o.alignedTimeout.String(), "--rate", fmt.Sprint(o.rate),
				"--sink-share", fmt.Sprint(o.sinkShare), "--batch-size", fmt.Sprint(o.batchSize)}
			rep := benchReport{Bench: "backpressure", Config: map[string]any{
				"duration_ms": o.duration.Milliseconds(), "checkpoint_interval_ms": o.interval.Milliseconds(),
				"aligned_timeout_ms": o.alignedTimeout.Milliseconds(), "source_records_per_sec": o.rate,
				"sink_records_per_sec": o.rate * o.sinkShare, "source_parallelism": backpressureSrcs, "sink_parallelism": 1,
				"batch_size": o.batchSize, "rss_bound_bytes": o.rssBound,
			}}
			var base modeResult
			for _, m := range []string{modeAligned, modeUnaligned, modeAlignedTimeout, modeNone} {
				if !asJSON {
					fmt.Fprintf(os.Stderr, "backpressure: running %s for %s…\n", m, o.duration)
				}
				r, err := runChild(c.Context(), "backpressure", m, args)
				if err != nil {
					return err
				}
				if m == modeNone {
					base = r
				} else {
					rep.Modes = append(rep.Modes, r)
				}
			}
			rep.Extra = map[string]any{"mode": "no checkpoints", "peak_rss_bytes": base.PeakRSSBytes, "rss_growth_bytes": base.RSSGrowthBytes}
			rep.Target = backpressureTargets(o, rep.Modes, base)
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(rep)
			}
			printBackpressure(o, rep, base)
			return nil
		},
	}
	fs := c.Flags()
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long the sources run, per mode")
	fs.DurationVar(&o.interval, "interval", time.Second, "checkpoint interval")
	fs.DurationVar(&o.alignedTimeout, "aligned-timeout", 100*time.Millisecond, "alignment timeout of the aligned-timeout mode")
	fs.Float64Var(&o.rate, "rate", 100_000, "records per second of the sources together")
	fs.Float64Var(&o.sinkShare, "sink-share", 0.1, "the sink's rate as a share of the sources' rate")
	fs.IntVar(&o.batchSize, "batch-size", 1024, "pipeline.batch-size")
	fs.Int64Var(&o.rssBound, "rss-bound", defaultRSSBound, "bytes of peak RSS a mode may use above the no-checkpoint baseline")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.StringVar(&childMode, "child-mode", "", "run one mode and print its result line (used by the bench itself)")
	_ = fs.MarkHidden("child-mode")
	return c
}

// runBackpressureMode runs the backpressure job in one mode in this
// process.
func runBackpressureMode(o backpressureOptions, mode string) (modeResult, error) {
	env, cleanup, err := newBenchEnv(mode, o.interval, o.alignedTimeout, map[string]string{
		config.BatchSize: fmt.Sprint(o.batchSize),
	})
	if err != nil {
		return modeResult{}, err
	}
	defer cleanup()
	b := calibrateBurner()
	iters := b.iterations(time.Duration(float64(time.Second) / (o.rate * o.sinkShare)))
	src := weir.FromSource(env, func() weir.Source[loadRecord] {
		return &timedSource{rate: o.rate / backpressureSrcs, keys: 1000, duration: o.duration}
	}).Name("source").UID("source").Parallelism(backpressureSrcs)
	slow := weir.Process(weir.KeyBy(src, recordKey), func() weir.KeyedProcessFunction[int64, loadRecord, loadRecord] {
		return &keyedCount{burn: &burner{perNano: b.perNano}, iters: iters}
	}).Name("slow-sink").UID("slow-sink").Parallelism(1)
	weir.SinkTo(slow, func() weir.Sink[loadRecord] { return discard[loadRecord]{} }).Name("discard").UID("discard").Parallelism(1)
	return runModeJob(env, "bench-backpressure", mode, o.duration)
}

// backpressureTargets checks the targets.
func backpressureTargets(o backpressureOptions, modes []modeResult, base modeResult) []targetResult {
	var out []targetResult
	for _, m := range modes {
		if m.Mode == modeUnaligned {
			out = append(out, targetResult{
				Name:   "unaligned median checkpoint duration <= 1s",
				Pass:   m.Checkpoints > 0 && time.Duration(m.CheckpointDurationMs)*time.Millisecond <= unalignedTarget,
				Detail: fmt.Sprintf("median %d ms over %d checkpoints", m.CheckpointDurationMs, m.Checkpoints),
			})
		}
	}
	for _, m := range modes {
		growth := float64(m.RSSGrowthBytes) / float64(max(m.RSSAtQuarterBytes, 1))
		above := m.PeakRSSBytes - base.PeakRSSBytes
		out = append(out, targetResult{
			Name: fmt.Sprintf("%s memory bounded", m.Mode),
			Pass: m.RSSAtQuarterBytes > 0 && growth < rssGrowthTarget && above <= o.rssBound,
			Detail: fmt.Sprintf("peak RSS %+.1f%% from 25%% to 100%% of the run (< %.0f%%); peak %s, %s above the no-checkpoint baseline (<= %s)",
				100*growth, 100*rssGrowthTarget, bytes(m.PeakRSSBytes), bytes(above), bytes(o.rssBound)),
		})
	}
	return out
}

func printBackpressure(o backpressureOptions, rep benchReport, base modeResult) {
	fmt.Printf("backpressure  source (%d subtasks, %.0f records/s) -> hash -> sink at %.0f records/s (CPU work); checkpoints every %s; %s per mode\n",
		backpressureSrcs, o.rate, o.rate*o.sinkShare, o.interval, o.duration)
	fmt.Printf("  %-16s %11s %20s %12s %12s %14s %14s %10s %12s\n", "mode", "checkpoints", "duration median/max", "start delay", "alignment", "buffered", "persisted", "peak RSS", "RSS growth")
	for _, m := range rep.Modes {
		fmt.Printf("  %-16s %11d %20s %12s %12s %14s %14s %10s %12s\n", m.Mode, m.Checkpoints,
			fmt.Sprintf("%d/%d ms", m.CheckpointDurationMs, m.CheckpointDurationMaxMs),
			fmt.Sprintf("%d ms", m.StartDelayMs), fmt.Sprintf("%d ms", m.AlignmentDurationMs),
			bytes(m.AlignmentBufferedBytes), bytes(m.PersistedBytes), bytes(m.PeakRSSBytes), bytes(m.RSSGrowthBytes))
	}
	fmt.Printf("  %-16s %11s %20s %12s %12s %14s %14s %10s %12s\n", "no checkpoints", "-", "-", "-", "-", "-", "-", bytes(base.PeakRSSBytes), bytes(base.RSSGrowthBytes))
	for _, t := range rep.Target {
		verdict := "PASS"
		if !t.Pass {
			verdict = "FAIL"
		}
		fmt.Printf("  %s  %s: %s\n", verdict, t.Name, t.Detail)
	}
}
