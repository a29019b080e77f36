package bench

// bench weak's children: the parent re-executes its binary with the
// hidden --child-section and --child-mode flags; the child runs one job
// and prints one weakChild line.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobstatus"
)

// weakBufferTimeout is the buffer timeout of every bench weak job: short,
// so that a rate measured over a few hundred milliseconds is not the
// rhythm of 100 ms flushes.
const weakBufferTimeout = 10 * time.Millisecond

// weakChild is one mode of one section: a child's line, and an entry of
// its section's "modes". Each section fills its own fields.
type weakChild struct {
	Section string `json:"section"`
	Mode    string `json:"mode"`
	// Error is why the child failed (the other fields are then empty).
	Error      string  `json:"error,omitempty"`
	RunSeconds float64 `json:"run_seconds"`
	// Checkpoints completed (weak: task snapshots) and failed.
	Checkpoints       int   `json:"checkpoints"`
	FailedCheckpoints int64 `json:"failed_checkpoints"`
	// Weak is the job's WeakStats (weak mode only).
	Weak *weakCounts `json:"weak_stats,omitempty"`

	// Skew and cost: the counting task's records per second.
	RecordsPerSec float64 `json:"records_per_sec,omitempty"`
	// Skew: creation at A to the count, of every 16th record of A.
	P50Ms float64 `json:"p50_ms,omitempty"`
	P99Ms float64 `json:"p99_ms,omitempty"`
	// LongestStallMs is the longest time the count processed nothing
	// while the sources ran (sampled every 5 ms).
	LongestStallMs float64 `json:"longest_stall_ms,omitempty"`
	// AlignmentMs is the median alignment (first to last barrier) of the
	// completed checkpoints.
	AlignmentMs int64 `json:"alignment_ms_median,omitempty"`

	// Recovery.
	FailuresFired int       `json:"failures_fired,omitempty"`
	RecoveryMs    []float64 `json:"recovery_ms,omitempty"` // per failure: failure to the failed subtask's next record
	RecoveryP50Ms float64   `json:"recovery_p50_ms,omitempty"`
	RecoveryMaxMs float64   `json:"recovery_max_ms,omitempty"`
	// The keyed subtasks that did not fail: records/s from each failure
	// until the failed subtask processed again (at least
	// weakRecoveryMinSpan), against the second before the failure,
	// summed over the failures.
	OthersBeforePerSec float64 `json:"others_before_per_sec,omitempty"`
	OthersDuringPerSec float64 `json:"others_during_per_sec,omitempty"`
	OthersRatio        float64 `json:"others_ratio,omitempty"`
	// The committed output against demo.Expected: lines missing, lines
	// committed more than once, lines that are not the expected line of
	// their event.
	ExpectedLines   int64 `json:"expected_lines,omitempty"`
	CommittedLines  int64 `json:"committed_lines,omitempty"`
	MissingLines    int64 `json:"missing_lines"`
	DuplicatedLines int64 `json:"duplicated_lines"`
	WrongLines      int64 `json:"wrong_lines"`

	// Scale: checkpoints (weak: task snapshots) triggered, completed and
	// failed, and the share completed; the injector's failed and seen
	// state files.
	Triggered        int64   `json:"triggered,omitempty"`
	Completed        int64   `json:"completed,omitempty"`
	Failed           int64   `json:"failed,omitempty"`
	Share            float64 `json:"share,omitempty"`
	InjectedFailures int64   `json:"injected_failures,omitempty"`
	InjectedFiles    int64   `json:"injected_files,omitempty"`

	// Cost: the process's CPU time per record; every round's records/s.
	CPUNsPerRecord float64   `json:"cpu_ns_per_record,omitempty"`
	RoundsPerSec   []float64 `json:"rounds_records_per_sec,omitempty"`
}

// weakCounts is jobstatus.WeakStats loaded.
type weakCounts struct {
	Failures           int64   `json:"failures"`
	TaskRestarts       int64   `json:"task_restarts"`
	Replayed           int64   `json:"replayed"`
	Lost               int64   `json:"lost"`
	Duplicated         int64   `json:"duplicated"`
	Dropped            int64   `json:"dropped"`
	SnapshotsCompleted int64   `json:"snapshots_completed"`
	SnapshotsFailed    int64   `json:"snapshots_failed"`
	Recoveries         int64   `json:"recoveries"`
	RecoveryMeanMs     float64 `json:"recovery_mean_ms"`
	LastRecoveryMs     float64 `json:"last_recovery_ms"`
}

func loadWeak(w *jobstatus.WeakStats) *weakCounts {
	c := &weakCounts{
		Failures: w.Failures.Load(), TaskRestarts: w.TaskRestarts.Load(), Replayed: w.Replayed.Load(),
		Lost: w.Lost.Load(), Duplicated: w.Duplicated.Load(), Dropped: w.Dropped.Load(),
		SnapshotsCompleted: w.SnapshotsCompleted.Load(), SnapshotsFailed: w.SnapshotsFailed.Load(),
		Recoveries: w.Recoveries.Load(), LastRecoveryMs: ms(time.Duration(w.LastRecoveryNanos.Load())),
	}
	if c.Recoveries > 0 {
		c.RecoveryMeanMs = ms(time.Duration(w.RecoveryNanos.Load() / c.Recoveries))
	}
	return c
}

// runWeakChildProcess runs one section's mode in a child; a failure is
// the entry's Error.
func runWeakChildProcess(ctx context.Context, section, mode string, args []string, timeout time.Duration) weakChild {
	r := weakChild{Section: section, Mode: mode}
	if ctx == nil {
		ctx = context.Background()
	}
	exe, err := os.Executable()
	if err != nil {
		r.Error = fmt.Sprintf("find own binary: %v", err)
		return r
	}
	// A mode that hangs (a job that never ends) must not hang the
	// bench: its entry reports the timeout.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append(append([]string{"bench", "weak"}, args...), "--child-section", section, "--child-mode", mode)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w after %s", ctx.Err(), timeout)
		}
		r.Error = fmt.Sprintf("child process: %v; its stderr:\n%s", err, tailString(stderr.String(), 2000))
		return r
	}
	line := lastOutputLine(stdout.String())
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return weakChild{Section: section, Mode: mode, Error: fmt.Sprintf("child printed %q, not a result: %v", line, err)}
	}
	return r
}

// runWeakChild runs one section's mode in this process.
func runWeakChild(o weakOptions, section, mode string) (weakChild, error) {
	switch section {
	case sectionSkew:
		return runWeakSkew(o, mode)
	case sectionRecovery:
		return runWeakRecovery(o, mode)
	case sectionScale:
		return runWeakScale(o, mode)
	case sectionCost:
		return runWeakCost(o, mode)
	}
	return weakChild{}, usagef("--child-section: unknown section %q", section)
}

// weakModeKeys are the configuration keys of a mode at a checkpoint
// interval.
func weakModeKeys(mode string, interval time.Duration) (map[string]string, error) {
	keys := map[string]string{config.CheckpointingInterval: fmt.Sprintf("%dms", interval.Milliseconds())}
	switch mode {
	case modeAligned:
		keys[config.CheckpointingMode] = config.ModeExactlyOnce
	case modeUnaligned:
		keys[config.CheckpointingMode] = config.ModeExactlyOnce
		keys[config.CheckpointingUnaligned] = "true"
	case modeAtLeastOnce:
		keys[config.CheckpointingMode] = config.ModeAtLeastOnce
	case modeWeak:
		keys[config.CheckpointingMode] = config.ModeWeak
	case modeNone:
		keys[config.CheckpointingInterval] = "0ms"
	default:
		return nil, usagef("unknown mode %q: want %s, %s, %s, %s or %s", mode, modeAligned, modeUnaligned, modeAtLeastOnce, modeWeak, modeNone)
	}
	return keys, nil
}

// newWeakEnv is a job environment in mode with keys on top, checkpoints
// in a temporary folder.
func newWeakEnv(mode string, interval time.Duration, keys map[string]string) (*weir.Env, func(), error) {
	mk, err := weakModeKeys(mode, interval)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "weir-bench-weak-*")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	cfg := weir.NewConfig()
	mk[config.CheckpointsDir] = dir
	mk[config.BufferTimeout] = fmt.Sprintf("%dms", weakBufferTimeout.Milliseconds())
	for k, v := range keys {
		mk[k] = v
	}
	for k, v := range mk {
		if err := cfg.Set(k, v); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("%s=%s: %w", k, v, err)
		}
	}
	return weir.NewEnv(weir.WithConfig(cfg)), cleanup, nil
}

// progressSampler samples counters every weakSampleEvery from its start:
// the benches' rates over any window, and the pauses of a task's progress.
type progressSampler struct {
	counters []*atomic.Int64
	start    time.Time

	mu   sync.Mutex
	at   []time.Duration // since start
	vals [][]int64       // per sample, per counter

	stop chan struct{}
	done chan struct{}
}

const weakSampleEvery = 5 * time.Millisecond

func startSampler(counters []*atomic.Int64) *progressSampler {
	s := &progressSampler{counters: counters, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(weakSampleEvery)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-tick.C:
			case <-s.stop:
				s.sample()
				return
			}
		}
	}()
	return s
}

func (s *progressSampler) sample() {
	v := make([]int64, len(s.counters))
	for i, c := range s.counters {
		v[i] = c.Load()
	}
	s.mu.Lock()
	s.at = append(s.at, time.Since(s.start))
	s.vals = append(s.vals, v)
	s.mu.Unlock()
}

func (s *progressSampler) finish() {
	close(s.stop)
	<-s.done
}

// since is t as an offset from the sampler's start.
func (s *progressSampler) since(t time.Time) time.Duration { return t.Sub(s.start) }

// value is the sum of the counters in idx at the last sample at or before
// t (0 before the first).
func (s *progressSampler) value(t time.Duration, idx []int) int64 {
	k := -1
	for i, a := range s.at {
		if a > t {
			break
		}
		k = i
	}
	if k < 0 {
		return 0
	}
	var n int64
	for _, i := range idx {
		n += s.vals[k][i]
	}
	return n
}

// delta is how much the counters in idx grew over [from, to].
func (s *progressSampler) delta(from, to time.Duration, idx []int) int64 {
	return s.value(to, idx) - s.value(from, idx)
}

// longestStall is the longest span within [from, to] in which counter i
// did not grow, counted from its first growth.
func (s *progressSampler) longestStall(i int, from, to time.Duration) time.Duration {
	var longest time.Duration
	var since time.Duration = -1
	for k := 1; k < len(s.at); k++ {
		if s.at[k] < from || s.at[k] > to {
			continue
		}
		if s.vals[k][i] != s.vals[k-1][i] {
			since = s.at[k]
			continue
		}
		if since >= 0 {
			longest = max(longest, s.at[k]-since)
		}
	}
	return longest
}

// fillCheckpoints sets a child's checkpoint counts and median alignment.
func fillCheckpoints(r *weakChild, cps []jobstatus.CheckpointStats, status *jobstatus.JobStatus, mode string) {
	r.Checkpoints = len(cps)
	r.FailedCheckpoints = status.FailedCheckpoints.Load()
	if len(cps) > 0 {
		var align []int64
		for _, c := range cps {
			align = append(align, c.AlignmentDuration.Milliseconds())
		}
		r.AlignmentMs = medianInt(align)
	}
	if mode == modeWeak {
		// Task snapshots: no barrier checkpoint exists.
		r.Weak = loadWeak(&status.Weak)
		r.Checkpoints = int(r.Weak.SnapshotsCompleted)
		r.FailedCheckpoints = r.Weak.SnapshotsFailed
	}
}
