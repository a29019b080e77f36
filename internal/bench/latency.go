package bench

// bench latency: how long a record of the demo's keyed computation takes
// from its creation at the source to the sink task, and until the
// exactly-once sink commits it, at half the job's maximum throughput, with
// the default buffer timeout and with 1 ms (issue 18, part 4).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/internal/config"
)

// latencyResult is what `weir bench latency --json` prints (documented in
// BENCHMARKS.md). Runs holds one entry per buffer timeout; the contract's
// fields are buffer_timeout_ms, records_per_sec, p50_ms, p99_ms, p999_ms
// and commit_p99_ms, the others explain them.
type latencyResult struct {
	Benchmark              string       `json:"benchmark"` // "latency"
	Keys                   int64        `json:"keys"`
	Parallelism            int          `json:"parallelism"`
	CheckpointIntervalMs   float64      `json:"checkpoint_interval_ms"`
	DefaultBufferTimeoutMs float64      `json:"default_buffer_timeout_ms"`
	Load                   float64      `json:"load"` // the runs' rate as a share of the maximum with the default timeout
	DurationSeconds        float64      `json:"duration_seconds"`
	WarmupSeconds          float64      `json:"warmup_seconds"`
	Rounds                 int          `json:"rounds"`
	LoadAvg                string       `json:"loadavg"` // /proc/loadavg before the first round
	Runs                   []latencyRun `json:"runs"`
}

// latencyRun is one buffer timeout's figures: medians over the rounds of
// each round's figure.
type latencyRun struct {
	BufferTimeoutMs float64 `json:"buffer_timeout_ms"`
	// RecordsPerSec is the rate of the measured run: records created in
	// the measured window that reached the sink, per second of window.
	RecordsPerSec float64 `json:"records_per_sec"`
	// Creation at the source to arrival at the sink task.
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
	// Creation to the commit of the record's transaction.
	CommitP50Ms float64 `json:"commit_p50_ms"`
	CommitP99Ms float64 `json:"commit_p99_ms"`

	DefaultTimeout       bool    `json:"default_timeout"`
	CheckpointIntervalMs float64 `json:"checkpoint_interval_ms"`
	CheckpointP99Ms      float64 `json:"checkpoint_p99_ms"` // nearest rank over the run's checkpoints
	Checkpoints          int     `json:"checkpoints"`       // completed in the run
	FailedCheckpoints    int64   `json:"failed_checkpoints"`
	// CheckpointFailures are the failed checkpoints' reasons, of every
	// round (those still in the job's history of 10).
	CheckpointFailures []string `json:"checkpoint_failures,omitempty"`
	// MaxRecordsPerSec is the same job unthrottled with this timeout;
	// ThroughputCost is 1 - MaxRecordsPerSec / that of the default timeout.
	MaxRecordsPerSec float64 `json:"max_records_per_sec"`
	ThroughputCost   float64 `json:"throughput_cost"`
	// CPUNsPerRecord is the process's CPU time per record in the measured
	// run: the cost of the timeout at the same rate.
	CPUNsPerRecord float64 `json:"cpu_ns_per_record"`
	// Waiting for a CPU in the measured run: Go's scheduler latency
	// (runnable goroutine to running) and the kernel's run queue delay of
	// the process's threads, in ms per second of run (2 threads waiting
	// all the time: 2000).
	SchedLatencyP99Ms  float64 `json:"sched_latency_p99_ms"`
	SchedLatencyP999Ms float64 `json:"sched_latency_p999_ms"`
	RunQueueMsPerSec   float64 `json:"run_queue_wait_ms_per_s"`
	// A goroutine sleeping 1 ms over and over during the run: how late
	// its wake-ups came (Go's timers and the kernel together).
	WakeLateP99Ms  float64 `json:"wake_late_p99_ms"`
	WakeLateP999Ms float64 `json:"wake_late_p999_ms"`
	// MeasuredRecords reached the sink; CommittedRecords of them were
	// committed (the others were in the transaction the final cancel
	// aborted, which a long enough tail leaves empty).
	MeasuredRecords  int64 `json:"measured_records"`
	CommittedRecords int64 `json:"committed_records"`

	TargetP99Ms    float64 `json:"target_p99_ms"` // max(10 ms, 2 x the buffer timeout)
	P99Met         bool    `json:"p99_met"`
	TargetCommitMs float64 `json:"target_commit_ms"` // checkpoint interval + checkpoint p99
	CommitMet      bool    `json:"commit_met"`
}

// latencyTargetP99 is the p99 target: 10 ms with a 1 ms timeout,
// 2 x the timeout at the default (100 ms); for any other timeout the
// larger of the two rules.
func latencyTargetP99(timeout time.Duration) time.Duration {
	return max(10*time.Millisecond, 2*timeout)
}

func newLatencyBench() *cobra.Command {
	var (
		keys        int64
		parallelism int
		interval    time.Duration
		duration    time.Duration
		warmup      time.Duration
		calibration time.Duration
		load        float64
		rate        float64
		rounds      int
		timeouts    []string
		asJSON      bool
		cpuProfile  string
	)
	c := &cobra.Command{
		Use:   "latency",
		Short: "Source-to-sink and source-to-commit latency of the demo's keyed computation at half its maximum throughput",
		Long: `latency runs the demo's keyed computation (datagen events -> key by account
-> count and total per account in a ValueState) into a two-phase-commit
sink, every record carrying the time its source created it. The sink
records, for every record created in the measured window, the time from
creation to its arrival at the sink task and to the commit of its
transaction, in log-linear histograms (0.8 % resolution).

Each round first runs the job unthrottled for --calibration with each
buffer timeout (max_records_per_sec; throughput_cost against the default
timeout), then runs it at --load of the default timeout's maximum (or
--rate) with each buffer timeout, checkpoints every --checkpoint-interval,
measuring the records created in --duration after --warmup. Figures are
medians over --rounds rounds.

Targets, printed met/missed: p99 <= 10 ms with a 1 ms buffer timeout and
<= 2x the buffer timeout at the default; commit p99 <= checkpoint interval
+ p99 checkpoint duration.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if keys < 1 || parallelism < 1 || rounds < 1 {
				return usagef("--keys, --parallelism and --rounds must be at least 1")
			}
			if interval <= 0 || duration <= 0 || calibration <= 0 || warmup < 0 {
				return usagef("--checkpoint-interval, --duration and --calibration must be positive, --warmup not negative")
			}
			if load <= 0 || load > 1 || rate < 0 {
				return usagef("--load must be in (0, 1] and --rate not negative")
			}
			def := config.New().Duration(config.BufferTimeout)
			var bts []time.Duration
			for _, s := range timeouts {
				d := def
				if s != "default" {
					var err error
					if d, err = config.ParseDuration(s); err != nil {
						return usagef("--buffer-timeout %q: %v (or \"default\", %s)", s, err, def)
					}
				}
				if !slices.Contains(bts, d) {
					bts = append(bts, d)
				}
			}
			if len(bts) == 0 {
				return usagef("--buffer-timeout: give at least one timeout")
			}
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			res := latencyResult{Benchmark: "latency", Keys: keys, Parallelism: parallelism,
				CheckpointIntervalMs: ms(interval), DefaultBufferTimeoutMs: ms(def), Load: load,
				DurationSeconds: duration.Seconds(), WarmupSeconds: warmup.Seconds(), Rounds: rounds, LoadAvg: loadAvg()}
			base := latencyRunConfig{keys: keys, parallelism: parallelism, interval: interval, warmup: warmup}
			rs, err := measureLatency(context.Background(), base, def, bts, calibration, duration, load, rate, rounds)
			if err != nil {
				return err
			}
			res.Runs = rs
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(res)
			}
			printLatency(res)
			return nil
		},
	}
	fs := c.Flags()
	fs.Int64Var(&keys, "keys", 1000, "accounts")
	fs.IntVarP(&parallelism, "parallelism", "p", 2, "parallelism of the job")
	fs.DurationVar(&interval, "checkpoint-interval", time.Second, "checkpoint interval of every run")
	fs.DurationVar(&duration, "duration", 10*time.Second, "measured window of each latency run (records created in it are measured)")
	fs.DurationVar(&warmup, "warmup", time.Second, "time after the job's start before the measured window")
	fs.DurationVar(&calibration, "calibration", 3*time.Second, "measured window of each unthrottled run finding the maximum throughput")
	fs.Float64Var(&load, "load", 0.5, "the latency runs' rate as a share of the maximum throughput with the default buffer timeout")
	fs.Float64Var(&rate, "rate", 0, "records/s of the latency runs instead of --load x the maximum (the calibration runs still report the maximum)")
	fs.IntVar(&rounds, "rounds", 3, "rounds, each calibrating and measuring every buffer timeout; medians are reported")
	fs.StringSliceVar(&timeouts, "buffer-timeout", []string{"default", "1ms"}, `buffer timeouts to measure ("default" = execution.buffer-timeout.interval's default)`)
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of all runs to this file")
	return c
}

// measureLatency runs the rounds: per round the calibration of every
// timeout, then the latency run of every timeout at the round's rate.
func measureLatency(ctx context.Context, base latencyRunConfig, def time.Duration, bts []time.Duration, calibration, duration time.Duration, load, rate float64, rounds int) ([]latencyRun, error) {
	per := make([][]latencyRun, len(bts)) // by timeout, by round
	// Tails: an unthrottled run's queues drain in milliseconds; a
	// measured run's last records wait for the checkpoint after the
	// window and its commit.
	// (Capped: with a checkpoint interval of minutes, to see the latency
	// without checkpoints, nothing commits and only arrivals count.)
	calTail := 500 * time.Millisecond
	runTail := min(2*base.interval, 10*time.Second) + time.Second
	for r := 0; r < rounds; r++ {
		maxRate := make([]float64, len(bts))
		defMax := 0.0
		calibrate := append([]time.Duration(nil), bts...)
		if !slices.Contains(calibrate, def) {
			calibrate = append(calibrate, def) // the rate needs it
		}
		// Odd rounds go through the timeouts backwards, so that neither
		// is always the one run while the machine warms up or is busier.
		order := func(i int) int { return i }
		if r%2 == 1 {
			slices.Reverse(calibrate)
			order = func(i int) int { return len(bts) - 1 - i }
		}
		for _, bt := range calibrate {
			o := base
			o.bufferTimeout, o.window, o.tail = bt, calibration, calTail
			cr, err := runLatencyJob(ctx, o)
			if err != nil {
				return nil, fmt.Errorf("calibration with buffer timeout %s: %w", bt, err)
			}
			m := cr.recordsPerSec(calibration)
			if bt == def {
				defMax = m
			}
			if i := slices.Index(bts, bt); i >= 0 {
				maxRate[i] = m
			}
		}
		runRate := rate
		if runRate == 0 {
			runRate = load * defMax
		}
		for k := range bts {
			i, bt := order(k), bts[order(k)]
			o := base
			o.bufferTimeout, o.window, o.tail, o.rate = bt, duration, runTail, runRate
			lr, err := runLatencyJob(ctx, o)
			if err != nil {
				return nil, err
			}
			per[i] = append(per[i], summarizeLatency(lr, o, def, maxRate[i], defMax))
		}
	}
	out := make([]latencyRun, len(bts))
	for i := range bts {
		out[i] = medianLatencyRun(per[i])
	}
	return out, nil
}

// summarizeLatency turns one run into its figures.
func summarizeLatency(r latencyRunResult, o latencyRunConfig, def time.Duration, maxRate, defMax float64) latencyRun {
	cp99 := r.checkpointP99()
	lr := latencyRun{
		BufferTimeoutMs: ms(o.bufferTimeout), RecordsPerSec: r.recordsPerSec(o.window),
		P50Ms: r.arrival.quantileMs(0.5), P99Ms: r.arrival.quantileMs(0.99), P999Ms: r.arrival.quantileMs(0.999), MaxMs: r.arrival.quantileMs(1),
		CommitP50Ms: r.commit.quantileMs(0.5), CommitP99Ms: r.commit.quantileMs(0.99),
		DefaultTimeout: o.bufferTimeout == def, CheckpointIntervalMs: ms(o.interval), CheckpointP99Ms: ms(cp99),
		Checkpoints: len(r.checkpoints), FailedCheckpoints: r.failed, CheckpointFailures: r.failures,
		MaxRecordsPerSec: maxRate, MeasuredRecords: int64(r.arrival.total), CommittedRecords: int64(r.commit.total),
		TargetP99Ms: ms(latencyTargetP99(o.bufferTimeout)), TargetCommitMs: ms(o.interval + cp99),
	}
	if defMax > 0 {
		lr.ThroughputCost = 1 - maxRate/defMax
	}
	lr.SchedLatencyP99Ms, lr.SchedLatencyP999Ms = r.schedP99Ms, r.schedP999Ms
	lr.WakeLateP99Ms, lr.WakeLateP999Ms = r.wake.quantileMs(0.99), r.wake.quantileMs(0.999)
	if r.elapsed > 0 {
		lr.RunQueueMsPerSec = ms(time.Duration(r.runQueueNs)) / r.elapsed.Seconds()
	}
	if r.all > 0 {
		lr.CPUNsPerRecord = float64(r.cpu.Nanoseconds()) / float64(r.all)
	}
	lr.P99Met = lr.P99Ms <= lr.TargetP99Ms
	lr.CommitMet = r.commit.total > 0 && lr.CommitP99Ms <= lr.TargetCommitMs
	return lr
}

// medianLatencyRun is the median of every figure over the rounds; the
// targets are judged on the medians.
func medianLatencyRun(rs []latencyRun) latencyRun {
	med := func(f func(latencyRun) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	m := rs[0]
	m.CheckpointFailures = nil
	for _, r := range rs {
		m.CheckpointFailures = append(m.CheckpointFailures, r.CheckpointFailures...)
	}
	m.RecordsPerSec = med(func(r latencyRun) float64 { return r.RecordsPerSec })
	m.P50Ms = med(func(r latencyRun) float64 { return r.P50Ms })
	m.P99Ms = med(func(r latencyRun) float64 { return r.P99Ms })
	m.P999Ms = med(func(r latencyRun) float64 { return r.P999Ms })
	m.MaxMs = med(func(r latencyRun) float64 { return r.MaxMs })
	m.CommitP50Ms = med(func(r latencyRun) float64 { return r.CommitP50Ms })
	m.CommitP99Ms = med(func(r latencyRun) float64 { return r.CommitP99Ms })
	m.CheckpointP99Ms = med(func(r latencyRun) float64 { return r.CheckpointP99Ms })
	m.Checkpoints = int(med(func(r latencyRun) float64 { return float64(r.Checkpoints) }))
	m.FailedCheckpoints = int64(med(func(r latencyRun) float64 { return float64(r.FailedCheckpoints) }))
	m.MaxRecordsPerSec = med(func(r latencyRun) float64 { return r.MaxRecordsPerSec })
	m.ThroughputCost = med(func(r latencyRun) float64 { return r.ThroughputCost })
	m.CPUNsPerRecord = med(func(r latencyRun) float64 { return r.CPUNsPerRecord })
	m.SchedLatencyP99Ms = med(func(r latencyRun) float64 { return r.SchedLatencyP99Ms })
	m.SchedLatencyP999Ms = med(func(r latencyRun) float64 { return r.SchedLatencyP999Ms })
	m.WakeLateP99Ms = med(func(r latencyRun) float64 { return r.WakeLateP99Ms })
	m.WakeLateP999Ms = med(func(r latencyRun) float64 { return r.WakeLateP999Ms })
	m.RunQueueMsPerSec = med(func(r latencyRun) float64 { return r.RunQueueMsPerSec })
	m.MeasuredRecords = int64(med(func(r latencyRun) float64 { return float64(r.MeasuredRecords) }))
	m.CommittedRecords = int64(med(func(r latencyRun) float64 { return float64(r.CommittedRecords) }))
	m.TargetCommitMs = m.CheckpointIntervalMs + m.CheckpointP99Ms
	m.P99Met = m.P99Ms <= m.TargetP99Ms
	m.CommitMet = m.CommittedRecords > 0 && m.CommitP99Ms <= m.TargetCommitMs
	return m
}

func printLatency(res latencyResult) {
	fmt.Printf("latency  keys=%d parallelism=%d checkpoint-interval=%gms duration=%gs warmup=%gs rounds=%d load=%.2f loadavg=%s\n",
		res.Keys, res.Parallelism, res.CheckpointIntervalMs, res.DurationSeconds, res.WarmupSeconds, res.Rounds, res.Load, res.LoadAvg)
	for _, r := range res.Runs {
		name := fmt.Sprintf("%gms", r.BufferTimeoutMs)
		if r.DefaultTimeout {
			name += " (default)"
		}
		fmt.Printf("  buffer-timeout %-14s %12.0f records/s  p50 %.2f ms  p99 %.2f ms  p999 %.2f ms  max %.2f ms  commit p50 %.0f ms p99 %.0f ms\n",
			name, r.RecordsPerSec, r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs, r.CommitP50Ms, r.CommitP99Ms)
		fmt.Printf("    %d checkpoints (p99 %.0f ms, %d failed); unthrottled %.0f records/s (throughput cost vs default %.1f%%); %.0f ns CPU per record\n",
			r.Checkpoints, r.CheckpointP99Ms, r.FailedCheckpoints, r.MaxRecordsPerSec, 100*r.ThroughputCost, r.CPUNsPerRecord)
		for _, f := range r.CheckpointFailures {
			fmt.Printf("    failed %s\n", f)
		}
		fmt.Printf("    waiting for a CPU: Go scheduler latency p99 %.2f ms p999 %.2f ms; a 1 ms sleep wakes late by p99 %.2f ms p999 %.2f ms; threads in the kernel's run queue %.0f ms per s\n",
			r.SchedLatencyP99Ms, r.SchedLatencyP999Ms, r.WakeLateP99Ms, r.WakeLateP999Ms, r.RunQueueMsPerSec)
		fmt.Printf("    targets: p99 <= %.0f ms %s; commit p99 <= %.0f ms %s; %d of %d measured records committed\n",
			r.TargetP99Ms, metWord(r.P99Met), r.TargetCommitMs, metWord(r.CommitMet), r.CommittedRecords, r.MeasuredRecords)
	}
}

func metWord(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// ms is d in (fractional) milliseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// loadAvg is /proc/loadavg's three averages, or "" where there is none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
