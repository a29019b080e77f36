package bench

// bench windows: the windows job's tumbling event-time windows (count and
// sum per account) on the engine, against a single-goroutine loop doing
// the same windowing, and against the same job without watermarks (whose
// windows then all fire at the end of the input) to price the watermarks.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobs/windows"
)

// windowsResult is what `weir bench windows --json` prints (documented in
// BENCHMARKS.md).
type windowsResult struct {
	Benchmark    string  `json:"benchmark"` // "windows"
	Events       int64   `json:"events"`
	Keys         int64   `json:"keys"`
	Parallelism  int     `json:"parallelism"`
	WindowMs     int64   `json:"window_ms"`
	MaxDisorder  int64   `json:"max_disorder_ms"`
	Runs         int     `json:"runs"`
	Firings      int64   `json:"firings"` // windows fired, the same for every configuration
	TargetRatio  float64 `json:"target_ratio"`
	HeapRatioMet bool    `json:"heap_ratio_met"`
	// The hand-written loop: one goroutine, a map of per-window per-key
	// accumulators, windows fired as its watermark passes their end.
	BaselineEventsPerSec float64          `json:"baseline_events_per_sec"`
	BaselineSeconds      float64          `json:"baseline_seconds"`
	Backends             []windowsBackend `json:"backends"`
}

// windowsBackend is the engine's figures with one state backend; medians
// over the runs.
type windowsBackend struct {
	Backend      string  `json:"backend"` // heap or lsm
	EventsPerSec float64 `json:"events_per_sec"`
	Seconds      float64 `json:"seconds"`
	// Ratio is EventsPerSec / BaselineEventsPerSec.
	Ratio float64 `json:"ratio"`
	// The same job with NoWatermarks: every window fires at the end.
	NoWatermarksEventsPerSec float64 `json:"no_watermarks_events_per_sec,omitempty"`
	NoWatermarksSeconds      float64 `json:"no_watermarks_seconds,omitempty"`
	// WatermarkNsPerEvent is (Seconds - NoWatermarksSeconds) / events in
	// nanoseconds: what watermarks (and firing windows as they pass,
	// rather than all at once at the end) cost per event. Negative when the
	// job without watermarks is the slower (its state grows with the
	// input).
	WatermarkNsPerEvent float64 `json:"watermark_ns_per_event"`
}

func newWindowsBench() *cobra.Command {
	var (
		events      int64
		keys        int64
		parallelism int
		size        string
		disorder    int64
		runs        int
		backends    []string
		asJSON      bool
		cpuProfile  string
		noWM        bool
	)
	c := &cobra.Command{
		Use:   "windows",
		Short: "Tumbling event-time windows (count+sum per key) against a hand-written loop, with and without watermarks",
		Long: `windows runs the windows job's computation (weir run windows --window
tumble:SIZE, without its file sinks: firings are counted and checked) on
the engine: generated events with bounded-out-of-orderness watermarks
(O = M) -> key by account -> tumbling event-time windows counting and
summing the amounts -> a counting sink. In the same process a
single-goroutine loop does the same windowing: the same events, a map of
per-window per-key accumulators, windows fired as its watermark passes
their end. Each round runs, per backend, the engine with watermarks and
with NoWatermarks (every window then fires at the end of the input), and
the loop; medians over --runs rounds are reported. Both sides must fire
the same windows with the same total count and sum.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if events < 1 || keys < 1 || parallelism < 1 || runs < 1 {
				return usagef("--events, --keys, --parallelism and --runs must be at least 1")
			}
			if disorder < 0 {
				return usagef("--max-disorder %d: must not be negative", disorder)
			}
			sizeMs, err := windows.ParseMillis("--window-size", size)
			if err != nil {
				return usagef("%v", err)
			}
			if sizeMs < 1 {
				return usagef("--window-size %s: must be at least 1 ms", size)
			}
			for _, b := range backends {
				if b != "heap" && b != "lsm" {
					return usagef("--state-backend %q: want heap or lsm (or both, comma-separated)", b)
				}
			}
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			o := windows.Options{Events: events, Keys: keys, Spacing: 1, MaxDisorder: disorder, OutOfOrderness: disorder,
				Window: windows.Spec{Kind: "tumble", Size: sizeMs}}
			res := windowsResult{Benchmark: "windows", Events: events, Keys: keys, Parallelism: parallelism,
				WindowMs: sizeMs, MaxDisorder: disorder, Runs: runs, TargetRatio: 0.5}
			type timings struct{ with, without []time.Duration }
			engine := make([]timings, len(backends))
			var base []time.Duration
			modes := []bool{true, false}
			if !noWM {
				modes = modes[:1]
			}
			for r := 0; r < runs; r++ {
				t0 := time.Now()
				want := baselineWindows(o)
				base = append(base, time.Since(t0))
				for bi, b := range backends {
					for _, wm := range modes {
						el, got, err := runEngineWindows(o, parallelism, b, wm)
						if err != nil {
							return err
						}
						if got != want {
							return fmt.Errorf("bench windows: the engine (%s, watermarks %v) fired %d windows with count %d sum %d; the loop fired %d with count %d sum %d",
								b, wm, got.firings, got.count, got.sum, want.firings, want.count, want.sum)
						}
						res.Firings = got.firings
						if wm {
							engine[bi].with = append(engine[bi].with, el)
						} else {
							engine[bi].without = append(engine[bi].without, el)
						}
					}
				}
			}
			res.BaselineSeconds = median(base).Seconds()
			res.BaselineEventsPerSec = float64(events) / res.BaselineSeconds
			for bi, b := range backends {
				w := median(engine[bi].with)
				br := windowsBackend{Backend: b, Seconds: w.Seconds(), EventsPerSec: float64(events) / w.Seconds()}
				if noWM {
					wo := median(engine[bi].without)
					br.NoWatermarksSeconds, br.NoWatermarksEventsPerSec = wo.Seconds(), float64(events)/wo.Seconds()
					br.WatermarkNsPerEvent = float64(w-wo) / float64(events)
				}
				br.Ratio = br.EventsPerSec / res.BaselineEventsPerSec
				if b == "heap" {
					res.HeapRatioMet = br.Ratio >= res.TargetRatio
				}
				res.Backends = append(res.Backends, br)
			}
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(res)
			}
			fmt.Printf("windows  events=%d keys=%d parallelism=%d tumble=%dms max-disorder=%dms runs=%d firings=%d\n", events, keys, parallelism, sizeMs, disorder, runs, res.Firings)
			fmt.Printf("  loop        %12.0f events/s  (median %.3fs, one goroutine, map of per-window accumulators)\n", res.BaselineEventsPerSec, res.BaselineSeconds)
			for _, b := range res.Backends {
				fmt.Printf("  %-4s        %12.0f events/s  (median %.3fs)  ratio %.3f\n", b.Backend, b.EventsPerSec, b.Seconds, b.Ratio)
				if noWM {
					fmt.Printf("  %-4s no-wm  %12.0f events/s  (median %.3fs)  watermarks cost %.0f ns/event\n", b.Backend, b.NoWatermarksEventsPerSec, b.NoWatermarksSeconds, b.WatermarkNsPerEvent)
				}
			}
			return nil
		},
	}
	fs := c.Flags()
	fs.Int64Var(&events, "events", 400_000, "events to generate (1 ms of event time apart, as weir run windows)")
	fs.Int64Var(&keys, "keys", 10_000, "accounts (window keys)")
	fs.IntVarP(&parallelism, "parallelism", "p", 2, "parallelism of the engine job")
	fs.StringVar(&size, "window-size", "10s", "tumbling window size, ms or a duration")
	fs.Int64Var(&disorder, "max-disorder", 2000, "the events' disorder M in ms (watermarks bound it by O = M)")
	fs.IntVar(&runs, "runs", 3, "rounds; medians are reported")
	fs.StringSliceVar(&backends, "state-backend", []string{"heap", "lsm"}, "state backends to measure (heap, lsm)")
	fs.BoolVar(&noWM, "no-watermarks", true, "also run each backend with NoWatermarks, to price the watermarks (--no-watermarks=false: skip, e.g. to profile the watermarked job alone)")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of all runs (engine and loop) to this file")
	return c
}

// windowTotals is what a run fired: windows, and their counts and sums
// added up (every event is counted once: O = M leaves none late).
type windowTotals struct{ firings, count, sum int64 }

// winAcc is a window's count and sum.
type winAcc struct{ Count, Sum int64 }

type winCountSum struct{}

func (winCountSum) CreateAccumulator() winAcc { return winAcc{} }
func (winCountSum) Add(e windows.Event, a winAcc) winAcc {
	return winAcc{a.Count + 1, a.Sum + e.Amount}
}
func (winCountSum) Result(a winAcc) winAcc   { return a }
func (winCountSum) Merge(a, b winAcc) winAcc { return winAcc{a.Count + b.Count, a.Sum + b.Sum} }

// windowsSink counts the firings and adds up their counts and sums.
type windowsSink struct{ total *windowsCounters }

type windowsCounters struct{ firings, count, sum atomic.Int64 }

func (s *windowsSink) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (s *windowsSink) Write(_ context.Context, b []winAcc) error {
	var c, sum int64
	for i := range b {
		c += b[i].Count
		sum += b[i].Sum
	}
	s.total.firings.Add(int64(len(b)))
	s.total.count.Add(c)
	s.total.sum.Add(sum)
	return nil
}
func (s *windowsSink) Flush(context.Context) error { return nil }
func (s *windowsSink) Close(context.Context) error { return nil }

// runEngineWindows runs the job once, without checkpoints.
func runEngineWindows(o windows.Options, p int, backend string, watermarks bool) (time.Duration, windowTotals, error) {
	dir, err := os.MkdirTemp("", "weir-bench-windows-*")
	if err != nil {
		return 0, windowTotals{}, err
	}
	defer os.RemoveAll(dir)
	cfg := weir.NewConfig()
	for key, v := range map[string]string{
		config.ParallelismDefault:    fmt.Sprint(p),
		config.CheckpointingInterval: "0ms",
		config.CheckpointsDir:        dir,
		config.StateBackendType:      backend,
		config.RestartStrategyType:   config.RestartNone,
	} {
		if err := cfg.Set(key, v); err != nil {
			return 0, windowTotals{}, err
		}
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	ts := func(e windows.Event, _ int64) int64 { return e.TS }
	strategy := weir.ForBoundedOutOfOrderness[windows.Event](time.Duration(o.OutOfOrderness) * time.Millisecond).WithTimestampAssigner(ts)
	if !watermarks {
		strategy = weir.NoWatermarks[windows.Event]().WithTimestampAssigner(ts)
	}
	gen := func(i int64) windows.Event { return windows.EventAt(i, o) }
	evs := weir.FromSourceWithWatermarks(env, datagen.New(gen, datagen.WithCount(o.Events)), strategy).Name("events").UID("events")
	w := weir.Window(weir.KeyBy(evs, func(e windows.Event) int64 { return e.Account }), windows.Assigner(o.Window))
	fired := weir.AggregateWindow(w, weir.AggregateFunction[windows.Event, winAcc, winAcc](winCountSum{})).Name("windows").UID("windows")
	var total windowsCounters
	weir.SinkTo(fired, func() weir.Sink[winAcc] { return &windowsSink{total: &total} }).Name("count").UID("count")
	t0 := time.Now()
	if err := env.Execute(context.Background(), "bench-windows"); err != nil {
		return 0, windowTotals{}, fmt.Errorf("bench windows (%s): %w", backend, err)
	}
	return time.Since(t0), windowTotals{total.firings.Load(), total.count.Load(), total.sum.Load()}, nil
}

// baselineWindows is the hand-written loop: generate event i, add it to
// its window's accumulator for its account (windows by start, then by
// account), advance the watermark (largest time seen - O - 1) and fire
// every window whose end it has passed; at the end, fire the rest.
func baselineWindows(o windows.Options) windowTotals {
	size := o.Window.Size
	open := map[int64]map[int64]winAcc{} // window start -> account -> acc
	var spare []map[int64]winAcc         // emptied maps, reused
	var t windowTotals
	fire := func(start int64) {
		m := open[start]
		for _, a := range m {
			t.firings++
			t.count += a.Count
			t.sum += a.Sum
		}
		clear(m)
		spare = append(spare, m)
		delete(open, start)
	}
	maxTS := int64(-1 << 62)
	next := int64(-1 << 62) // the oldest window start that may be open
	for i := int64(0); i < o.Events; i++ {
		e := windows.EventAt(i, o)
		start := e.TS - e.TS%size
		m := open[start]
		if m == nil {
			if n := len(spare); n > 0 {
				m, spare = spare[n-1], spare[:n-1]
			} else {
				m = make(map[int64]winAcc)
			}
			open[start] = m
			if next == -1<<62 || start < next {
				next = start
			}
		}
		a := m[e.Account]
		a.Count++
		a.Sum += e.Amount
		m[e.Account] = a
		maxTS = max(maxTS, e.TS)
		// A window [s, s+size) fires when the watermark reaches s+size-1.
		for wm := maxTS - o.OutOfOrderness - 1; next+size-1 <= wm && len(open) > 0; next += size {
			if _, ok := open[next]; ok {
				fire(next)
			}
		}
	}
	for len(open) > 0 {
		if _, ok := open[next]; ok {
			fire(next)
		}
		next += size
	}
	return t
}
