package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
)

// latencyRunConfig is one run of the latency job.
type latencyRunConfig struct {
	keys          int64
	parallelism   int
	rate          float64 // 0: unthrottled (the calibration of the maximum)
	bufferTimeout time.Duration
	interval      time.Duration // checkpoint interval
	// Records created in [warmup, warmup+window) after the job's start
	// are measured; the job runs tail longer so that they all arrive and
	// (with tail > interval + a checkpoint) commit.
	warmup, window, tail time.Duration
}

// latencyRunResult is what one run measured.
type latencyRunResult struct {
	arrival, commit *latencyHist
	all             int64 // records that reached the sinks, measured or not
	aborted         int64 // measured records whose transaction was aborted (the cancel at the end)
	checkpoints     []jobstatus.CheckpointStats
	failed          int64
	failures        []string      // reasons of the failed checkpoints still in the job's history
	cpu             time.Duration // the process's CPU time during the run
	elapsed         time.Duration
	// Waiting for a CPU during the run (latency_sched.go).
	schedP99Ms, schedP999Ms float64
	runQueueNs              int64
	wake                    *latencyHist // a 1 ms sleep's overshoots during the run
}

// recordsPerSec is the measured records' rate: those created in the
// window that reached the sink.
func (r latencyRunResult) recordsPerSec(window time.Duration) float64 {
	return float64(r.arrival.total) / window.Seconds()
}

// checkpointP99 is the nearest-rank p99 of the run's completed checkpoints'
// durations (trigger to completion): the largest below 100 checkpoints.
func (r latencyRunResult) checkpointP99() time.Duration {
	var h latencyHist
	for _, c := range r.checkpoints {
		h.record(int64(c.Duration))
	}
	return time.Duration(h.quantile(0.99))
}

// runLatencyJob runs the job for warmup+window+tail, then cancels it.
func runLatencyJob(ctx context.Context, o latencyRunConfig) (latencyRunResult, error) {
	dir, err := os.MkdirTemp("", "weir-bench-latency-*")
	if err != nil {
		return latencyRunResult{}, fmt.Errorf("bench latency: checkpoint folder: %w", err)
	}
	defer os.RemoveAll(dir)
	cfg := weir.NewConfig()
	for key, v := range map[string]string{
		config.ParallelismDefault:    fmt.Sprint(o.parallelism),
		config.CheckpointingInterval: fmt.Sprintf("%dms", o.interval.Milliseconds()),
		config.CheckpointsDir:        dir,
		config.BufferTimeout:         fmt.Sprintf("%dus", o.bufferTimeout.Microseconds()),
		config.RestartStrategyType:   config.RestartNone,
	} {
		if err := cfg.Set(key, v); err != nil {
			return latencyRunResult{}, fmt.Errorf("bench latency: %s=%s: %w", key, v, err)
		}
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	// The clock starts with the job (building it takes microseconds): the
	// warm-up covers deployment and the first checkpoint.
	rec := &latencyRecorder{clock: latencyClock{base: time.Now()}, from: int64(o.warmup), to: int64(o.warmup + o.window)}
	buildLatencyJob(env, latencyJobOptions{keys: o.keys, rate: o.rate}, rec)
	coll := collectCheckpoints(hooks.Plan(env).Status)
	runCtx, cancel := context.WithTimeout(ctx, o.warmup+o.window+o.tail)
	defer cancel()
	probe := startWakeProbe()
	cpu0, sched0, t0 := processCPU(), takeSchedSnapshot(), time.Now()
	err = env.Execute(runCtx, "bench-latency")
	cpu, sched1, elapsed := processCPU()-cpu0, takeSchedSnapshot(), time.Since(t0)
	wake := probe.finish()
	cps := coll.finish()
	if ctx.Err() != nil {
		return latencyRunResult{}, ctx.Err()
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return latencyRunResult{}, fmt.Errorf("bench latency (rate %.0f/s, buffer timeout %s): %w", o.rate, o.bufferTimeout, err)
	}
	if err == nil {
		return latencyRunResult{}, errors.New("bench latency: the unbounded job ended by itself")
	}
	r := latencyRunResult{checkpoints: cps, failed: hooks.Plan(env).Status.FailedCheckpoints.Load(), cpu: cpu, elapsed: elapsed,
		schedP99Ms: schedQuantile(sched0, sched1, 0.99), schedP999Ms: schedQuantile(sched0, sched1, 0.999),
		runQueueNs: sched1.runDelayNs - sched0.runDelayNs, wake: wake}
	for _, c := range hooks.Plan(env).Status.Checkpoints(time.Now()) {
		if c.Status == jobstatus.CheckpointFailed {
			r.failures = append(r.failures, fmt.Sprintf("checkpoint %d: %s", c.ID, c.FailureReason))
		}
	}
	r.arrival, r.commit, r.all, r.aborted = rec.totals()
	if r.arrival.total == 0 {
		return r, fmt.Errorf("bench latency: no record created in the measured window reached the sink (rate %.0f/s, window %s)", o.rate, o.window)
	}
	return r, nil
}

// processCPU is the user+system CPU time of this process so far.
func processCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
