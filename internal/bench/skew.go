package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
)

// skewOptions are the parameters of bench skew, shared by parent and
// children.
type skewOptions struct {
	duration time.Duration
	interval time.Duration
	delay    time.Duration // how long B's barrier waits behind B's backlog
	rate     float64       // A's records per second
}

// skewStep is the work B's throttle does per batch: an unaligned barrier
// waits at most about this long for the batch in progress.
const skewStep = 50 * time.Millisecond

// skewBatch is the batch size of the skew job: B's throttle processes one
// batch per skewStep.
const skewBatch = 128

// skewCredits is the credits per channel that make the data queued ahead of
// B's barrier (credits plus the default overdraft of 2, in batches) take
// delay to drain.
func skewCredits(delay time.Duration) int {
	return max(1, int(math.Round(float64(delay)/float64(skewStep)))-2)
}

func newSkewBench() *cobra.Command {
	var (
		o         skewOptions
		asJSON    bool
		childMode string
	)
	c := &cobra.Command{
		Use:   "skew",
		Short: "Aligned vs unaligned checkpoints when one input's barrier arrives late",
		Long: `skew runs Union(A, B) -> keyed count, where source A emits 10,000
records/s and source B's records pass a throttle that takes about 50 ms
per batch, with enough credits that the data queued ahead of B's barrier
takes --delay (2 s) to drain. An aligned checkpoint therefore waits about
--delay for B's barrier while A's channel is blocked; an unaligned one lets
the barrier overtake the queue and persists the overtaken records.

Each mode runs in its own child process (peak RSS is that mode's own).
Reported per mode: checkpoint duration (median, max), bytes alignment held
back (aligned: records queued on blocked channels when alignment ended;
unaligned: the channel state persisted), A's achieved rate and peak RSS.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.duration <= 0 || o.interval <= 0 || o.delay < skewStep || o.rate <= 0 {
				return usagef("--duration, --interval and --rate must be positive and --delay at least %s", skewStep)
			}
			if childMode != "" {
				r, err := runSkewMode(o, childMode)
				if err != nil {
					return err
				}
				return printChildResult(r)
			}
			args := []string{"--duration", o.duration.String(), "--interval", o.interval.String(), "--delay", o.delay.String(), "--rate", fmt.Sprint(o.rate)}
			rep := benchReport{Bench: "skew", Config: map[string]any{
				"duration_ms": o.duration.Milliseconds(), "checkpoint_interval_ms": o.interval.Milliseconds(),
				"barrier_delay_ms": o.delay.Milliseconds(), "source_a_records_per_sec": o.rate,
				"batch_size": skewBatch, "credits_per_channel": skewCredits(o.delay), "throttle_step_ms": skewStep.Milliseconds(),
				"parallelism": 1,
			}}
			for _, m := range []string{modeAligned, modeUnaligned} {
				if !asJSON {
					fmt.Fprintf(os.Stderr, "skew: running %s for %s…\n", m, o.duration)
				}
				r, err := runChild(c.Context(), "skew", m, args)
				if err != nil {
					return err
				}
				rep.Modes = append(rep.Modes, r)
			}
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(rep)
			}
			printSkew(o, rep)
			return nil
		},
	}
	fs := c.Flags()
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long the sources run, per mode")
	fs.DurationVar(&o.interval, "interval", time.Second, "checkpoint interval")
	fs.DurationVar(&o.delay, "delay", 2*time.Second, "how long the data queued ahead of B's barrier takes to drain")
	fs.Float64Var(&o.rate, "rate", 10_000, "records per second of source A")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.StringVar(&childMode, "child-mode", "", "run one mode and print its result line (used by the bench itself)")
	_ = fs.MarkHidden("child-mode")
	return c
}

// runSkewMode runs the skew job in one mode in this process.
func runSkewMode(o skewOptions, mode string) (modeResult, error) {
	env, cleanup, err := newBenchEnv(mode, o.interval, 0, map[string]string{
		config.ParallelismDefault:       "1",
		config.BatchSize:                fmt.Sprint(skewBatch),
		config.NetworkCreditsPerChannel: fmt.Sprint(skewCredits(o.delay)),
	})
	if err != nil {
		return modeResult{}, err
	}
	defer cleanup()
	var emittedA atomic.Int64
	a := weir.FromSource(env, func() weir.Source[loadRecord] {
		return &countingSource{timedSource: timedSource{rate: o.rate, keys: 1000, duration: o.duration}, n: &emittedA}
	}).Name("A").UID("A")
	b := weir.FromSource(env, func() weir.Source[loadRecord] {
		return &timedSource{keys: 1000, duration: o.duration}
	}).Name("B").UID("B")
	// Rebalance keeps the throttle out of B's task, so B's records (and
	// barriers) queue in the throttle's input gate.
	p := &pacer{rate: skewBatch / skewStep.Seconds(), slack: skewBatch}
	slowB := weir.Map(weir.Rebalance(b).Name("B-rebalance").UID("B-rebalance"), func(r loadRecord) loadRecord {
		p.tick()
		return r
	}).Name("B-throttle").UID("B-throttle")
	u := weir.Union(a, slowB).Name("union").UID("union")
	counts := weir.Process(weir.KeyBy(u, recordKey), func() weir.KeyedProcessFunction[int64, loadRecord, loadRecord] {
		return &keyedCount{}
	}).Name("count").UID("count")
	weir.SinkTo(counts, func() weir.Sink[loadRecord] { return discard[loadRecord]{} }).Name("discard").UID("discard")
	r, err := runModeJob(env, "bench-skew", mode, o.duration)
	if err != nil {
		return r, err
	}
	r.SourceRecordsPerSec = float64(emittedA.Load()) / o.duration.Seconds()
	return r, nil
}

// countingSource is a timedSource counting what it emitted.
type countingSource struct {
	timedSource
	n *atomic.Int64
}

func (s *countingSource) Read(ctx context.Context, dst []loadRecord, max int) ([]loadRecord, error) {
	before := len(dst)
	dst, err := s.timedSource.Read(ctx, dst, max)
	s.n.Add(int64(len(dst) - before))
	return dst, err
}

func printSkew(o skewOptions, rep benchReport) {
	fmt.Printf("skew  Union(A, B) -> keyed count; A %.0f records/s; B's barrier ~%s behind its throttle; checkpoints every %s; %s per mode\n",
		o.rate, o.delay, o.interval, o.duration)
	fmt.Printf("  %-10s %11s %20s %12s %12s %14s %14s %12s %10s\n", "mode", "checkpoints", "duration median/max", "start delay", "alignment", "buffered", "persisted", "A records/s", "peak RSS")
	for _, m := range rep.Modes {
		fmt.Printf("  %-10s %11d %20s %12s %12s %14s %14s %12.0f %10s\n", m.Mode, m.Checkpoints,
			fmt.Sprintf("%d/%d ms", m.CheckpointDurationMs, m.CheckpointDurationMaxMs),
			fmt.Sprintf("%d ms", m.StartDelayMs), fmt.Sprintf("%d ms", m.AlignmentDurationMs),
			bytes(m.AlignmentBufferedBytes), bytes(m.PersistedBytes), m.SourceRecordsPerSec, bytes(m.PeakRSSBytes))
	}
	fmt.Println("  (medians over the periodic checkpoints; buffered: records queued on blocked channels when alignment ended (aligned), the channel state (unaligned))")
}
