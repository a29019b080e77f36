package bench

// The checkpoint-mode benches (bench skew, bench backpressure) run each
// mode in a child process: the bench re-executes its own binary with the
// hidden --child-mode flag, the child runs one job and prints one JSON
// line, and the parent merges the lines. A child's peak RSS (VmHWM) is then
// that mode's own, not the high-water mark of every mode run before it.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
)

// Checkpoint modes of the benches, as the JSON names them.
const (
	modeAligned        = "aligned"
	modeUnaligned      = "unaligned"
	modeAlignedTimeout = "aligned-timeout"
	// modeNone runs without checkpoints: the memory baseline.
	modeNone = "none"
)

// modeResult is one mode's figures: one child's JSON line, and one entry of
// a bench's "modes". Durations are medians over the periodic checkpoints
// completed while the sources ran (the final checkpoint is left out).
type modeResult struct {
	Mode                 string `json:"mode"`
	CheckpointDurationMs int64  `json:"checkpoint_duration_ms"`
	// AlignmentBufferedBytes is the median over checkpoints of the bytes
	// alignment held back, summed over subtasks (CheckpointStats).
	AlignmentBufferedBytes int64 `json:"alignment_buffered_bytes"`
	PeakRSSBytes           int64 `json:"peak_rss_bytes"`
	Checkpoints            int   `json:"checkpoints"`

	CheckpointDurationMaxMs int64 `json:"checkpoint_duration_max_ms"`
	StartDelayMs            int64 `json:"start_delay_ms"`
	AlignmentDurationMs     int64 `json:"alignment_duration_ms"`
	AlignmentBufferedMax    int64 `json:"alignment_buffered_max_bytes"`
	PersistedBytes          int64 `json:"persisted_bytes"`
	FailedCheckpoints       int64 `json:"failed_checkpoints"`
	// RSSGrowthBytes is the peak RSS (VmHWM) when the sources end minus
	// the peak at a quarter of the run; RSSAtQuarterBytes the latter. Peaks
	// rather than samples: the Go heap breathes with each GC cycle, and
	// memory that grows without bound raises the peak too.
	RSSGrowthBytes    int64 `json:"rss_growth_bytes"`
	RSSAtQuarterBytes int64 `json:"rss_at_quarter_bytes"`
	// SourceRecordsPerSec is what the sources achieved (backpressure and
	// alignment slow them down).
	SourceRecordsPerSec float64 `json:"source_records_per_sec"`
	RunSeconds          float64 `json:"run_seconds"`
}

// benchReport is what a bench prints with --json: one object.
type benchReport struct {
	Bench  string            `json:"bench"`
	Config map[string]any    `json:"config"`
	Modes  []modeResult      `json:"modes"`
	Extra  map[string]any    `json:"baseline,omitempty"`
	Target []targetResult    `json:"targets,omitempty"`
	Notes  map[string]string `json:"notes,omitempty"`
}

// targetResult is one target a bench checks, printed pass/fail.
type targetResult struct {
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

// modeConfig sets the checkpointing keys of a mode.
func modeConfig(cfg *weir.Config, mode string, interval, alignedTimeout time.Duration) error {
	keys := map[string]string{}
	switch mode {
	case modeAligned:
	case modeUnaligned:
		keys[config.CheckpointingUnaligned] = "true"
	case modeAlignedTimeout:
		keys[config.CheckpointingUnaligned] = "true"
		keys[config.CheckpointingAlignedTimeout] = fmt.Sprintf("%dms", alignedTimeout.Milliseconds())
	case modeNone:
		interval = 0
	default:
		return usagef("unknown checkpoint mode %q: want %s, %s or %s", mode, modeAligned, modeUnaligned, modeAlignedTimeout)
	}
	keys[config.CheckpointingInterval] = fmt.Sprintf("%dms", interval.Milliseconds())
	for k, v := range keys {
		if err := cfg.Set(k, v); err != nil {
			return err
		}
	}
	return nil
}

// runChild re-executes this binary as `weir bench <bench> <args>
// --child-mode <mode>` and parses the result line it prints.
func runChild(ctx context.Context, bench, mode string, args []string) (modeResult, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	exe, err := os.Executable()
	if err != nil {
		return modeResult{}, fmt.Errorf("bench %s: find own binary to run mode %s: %w", bench, mode, err)
	}
	cmd := exec.CommandContext(ctx, exe, append(append([]string{"bench", bench}, args...), "--child-mode", mode)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return modeResult{}, fmt.Errorf("bench %s: mode %s: child process: %w; its stderr:\n%s", bench, mode, err, tailString(stderr.String(), 4000))
	}
	var r modeResult
	line := lastOutputLine(stdout.String())
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return modeResult{}, fmt.Errorf("bench %s: mode %s: child printed %q, not a result: %w", bench, mode, line, err)
	}
	return r, nil
}

func lastOutputLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// procStatusBytes reads a "kB" field (VmHWM, VmRSS) of /proc/self/status in
// bytes; 0 where there is no /proc (the benches then report no memory).
func procStatusBytes(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// checkpointCollector keeps every completed periodic checkpoint of a
// running job. The job's history keeps only the last ten, so it polls
// more often than checkpoints complete.
type checkpointCollector struct {
	status *jobstatus.JobStatus
	mu     sync.Mutex
	seen   map[int64]jobstatus.CheckpointStats
	stop   chan struct{}
	done   chan struct{}
}

func collectCheckpoints(s *jobstatus.JobStatus) *checkpointCollector {
	c := &checkpointCollector{status: s, seen: map[int64]jobstatus.CheckpointStats{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			c.poll()
			select {
			case <-tick.C:
			case <-c.stop:
				c.poll()
				return
			}
		}
	}()
	return c
}

func (c *checkpointCollector) poll() {
	hist := c.status.Checkpoints(time.Now())
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range hist {
		if h.Status == jobstatus.CheckpointCompleted && h.Kind == "periodic" {
			c.seen[int64(h.ID)] = h
		}
	}
}

// finish stops polling and returns the checkpoints by id.
func (c *checkpointCollector) finish() []jobstatus.CheckpointStats {
	close(c.stop)
	<-c.done
	out := make([]jobstatus.CheckpointStats, 0, len(c.seen))
	for _, h := range c.seen {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b jobstatus.CheckpointStats) int { return int(a.ID - b.ID) })
	return out
}

// summarize fills a mode's checkpoint figures from its checkpoints.
func summarize(r *modeResult, cps []jobstatus.CheckpointStats) {
	r.Checkpoints = len(cps)
	if len(cps) == 0 {
		return
	}
	var dur, delay, align, buf, persisted []int64
	for _, c := range cps {
		dur = append(dur, c.Duration.Milliseconds())
		delay = append(delay, c.StartDelay.Milliseconds())
		align = append(align, c.AlignmentDuration.Milliseconds())
		buf = append(buf, c.AlignmentBufferedBytes)
		persisted = append(persisted, c.PersistedInFlightBytes)
	}
	r.CheckpointDurationMs, r.CheckpointDurationMaxMs = medianInt(dur), slices.Max(dur)
	r.StartDelayMs, r.AlignmentDurationMs = medianInt(delay), medianInt(align)
	r.AlignmentBufferedBytes, r.AlignmentBufferedMax = medianInt(buf), slices.Max(buf)
	r.PersistedBytes = medianInt(persisted)
}

// medianInt is the upper median (as median does for durations).
func medianInt(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// runModeJob executes env's job to its end, sampling checkpoints and
// memory: the RSS at a quarter of duration and when duration has passed
// (the sources end then; what follows is draining and the final
// checkpoint). It fills everything but the bench-specific fields.
func runModeJob(env *weir.Env, name, mode string, duration time.Duration) (modeResult, error) {
	r := modeResult{Mode: mode}
	coll := collectCheckpoints(hooks.Plan(env).Status)
	var rssMu sync.Mutex
	stopRSS := make(chan struct{})
	rssDone := make(chan struct{})
	go func() {
		defer close(rssDone)
		select {
		case <-time.After(duration / 4):
		case <-stopRSS:
			return
		}
		q := procStatusBytes("VmHWM")
		rssMu.Lock()
		r.RSSAtQuarterBytes = q
		rssMu.Unlock()
		select {
		case <-time.After(duration - duration/4):
		case <-stopRSS:
			return
		}
		end := procStatusBytes("VmHWM")
		rssMu.Lock()
		r.RSSGrowthBytes = end - q
		rssMu.Unlock()
	}()
	t0 := time.Now()
	err := env.Execute(context.Background(), name)
	r.RunSeconds = time.Since(t0).Seconds()
	close(stopRSS)
	<-rssDone
	cps := coll.finish()
	if err != nil {
		return r, fmt.Errorf("mode %s: %w", mode, err)
	}
	summarize(&r, cps)
	r.FailedCheckpoints = hooks.Plan(env).Status.FailedCheckpoints.Load()
	r.SourceRecordsPerSec = float64(hooks.Plan(env).Status.SourceRecords.Load()) / duration.Seconds()
	r.PeakRSSBytes = procStatusBytes("VmHWM")
	return r, nil
}

// printChildResult prints a child's one line.
func printChildResult(r modeResult) error {
	return json.NewEncoder(os.Stdout).Encode(r)
}

// newBenchEnv is the configuration every mode of a bench shares.
func newBenchEnv(mode string, interval, alignedTimeout time.Duration, keys map[string]string) (*weir.Env, func(), error) {
	dir, err := os.MkdirTemp("", "weir-bench-*")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	cfg := weir.NewConfig()
	keys[config.CheckpointsDir] = dir
	for k, v := range keys {
		if err := cfg.Set(k, v); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	if err := modeConfig(cfg, mode, interval, alignedTimeout); err != nil {
		cleanup()
		return nil, nil, err
	}
	return weir.NewEnv(weir.WithConfig(cfg)), cleanup, nil
}
