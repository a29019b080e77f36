package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/internal/config"
)

// incrementalTarget is issue 5's target: an incremental checkpoint uploads
// at most this fraction of the full state.
const incrementalTarget = 0.05

// stateBenchResult is what `weir bench state --json` prints.
type stateBenchResult struct {
	Benchmark          string  `json:"benchmark"`
	Backend            string  `json:"backend"`
	Keys               int64   `json:"keys"`
	ValueBytes         int     `json:"value_bytes"`
	Churn              float64 `json:"churn"`
	CheckpointInterval string  `json:"checkpoint_interval"`
	Checkpoints        int     `json:"checkpoints"`
	Parallelism        int     `json:"parallelism"`
	GoMemLimit         string  `json:"gomemlimit,omitempty"`
	// IncrementalMode is "off", "on", or "refused: <reason>" when
	// --incremental was asked for and the runtime ran full checkpoints.
	IncrementalMode string `json:"incremental_mode"`

	// FullSizeBytes is the state size of the last checkpoint (every state
	// file it references).
	FullSizeBytes int64 `json:"full_size_bytes"`
	// IncrementalBytesPerCheckpoint is the median, over the churn
	// checkpoints, of the bytes each wrote to checkpoint storage; with
	// full checkpoints it is the full size.
	IncrementalBytesPerCheckpoint int64   `json:"incremental_bytes_per_checkpoint"`
	IncrementalFraction           float64 `json:"incremental_fraction"`
	IncrementalTarget             float64 `json:"incremental_target"`
	IncrementalTargetMet          bool    `json:"incremental_target_met"`
	UploadedBytesMeasuredBy       string  `json:"uploaded_bytes_measured_by"`
	// CheckpointDurationMs is the median duration of the churn checkpoints;
	// LoadCheckpointDurationMs that of the checkpoint after the load.
	CheckpointDurationMs     float64 `json:"checkpoint_duration_ms"`
	LoadCheckpointDurationMs float64 `json:"load_checkpoint_duration_ms"`
	RestoreMs                float64 `json:"restore_ms"`
	RestoreMeasuredBy        string  `json:"restore_measured_by"`
	RestoredCheckpoint       int64   `json:"restored_checkpoint"`
	// Throughput of the measured run: the load (blind writes) and the
	// churn phases (read, check, write).
	LoadRecordsPerSec   float64 `json:"load_records_per_sec"`
	UpdateRecordsPerSec float64 `json:"update_records_per_sec"`
	// PeakRSSBytes is the measured run's VmHWM; the restore run's is apart.
	PeakRSSBytes        int64 `json:"peak_rss_bytes"`
	RestorePeakRSSBytes int64 `json:"restore_peak_rss_bytes"`
	// StoreBytes is the size of the LSM stores on local disk (lsm only).
	StoreBytes int64 `json:"store_bytes,omitempty"`

	Compare       *stateCompare     `json:"compare,omitempty"`
	PerCheckpoint []stateCheckpoint `json:"per_checkpoint"`
	Seconds       float64           `json:"seconds"`
}

// stateCompare is the heap against lsm throughput on a state that fits in
// memory, both measured in this run.
type stateCompare struct {
	Keys int64           `json:"keys"`
	Heap stateThroughput `json:"heap"`
	LSM  stateThroughput `json:"lsm"`
	// Ratios are lsm / heap records per second.
	LoadRatio   float64 `json:"load_ratio"`
	UpdateRatio float64 `json:"update_ratio"`
}

type stateThroughput struct {
	LoadRecordsPerSec   float64 `json:"load_records_per_sec"`
	UpdateRecordsPerSec float64 `json:"update_records_per_sec"`
	PeakRSSBytes        int64   `json:"peak_rss_bytes"`
}

type stateBenchFlags struct {
	stateRunParams
	interval     string
	compareKeys  int64
	dir          string
	keep         bool
	asJSON       bool
	child        string
	childProfile string
}

func newStateBench() *cobra.Command {
	var f stateBenchFlags
	c := &cobra.Command{
		Use:   "state",
		Short: "Keyed state at scale: checkpoint size, duration and restore of the heap and lsm backends",
		Long: `state runs a keyed job whose ValueState holds one value of --value-bytes
per key. Phase 1 writes every one of --keys keys once, then a checkpoint is
taken; each of --checkpoints phases after it updates --churn × keys keys
(read, check, write; pseudo-random and deterministic), paced to at least
--checkpoint-interval, followed by a checkpoint. A second run then starts from
the last checkpoint and measures the restore (until its first record is
processed), and checks the values it updates. With --compare-heap-keys, the
heap and lsm backends each load that many keys and update them once, without
checkpoints, for a throughput comparison in this same run.

Every measured job runs in a child process of its own, so the peak RSS
(VmHWM) reported is that job's. Bytes uploaded per checkpoint are measured on
the checkpoint storage's files: a full checkpoint uploads its whole state.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			d, err := config.ParseDuration(f.interval)
			if err != nil {
				return usagef("--checkpoint-interval %q: %v", f.interval, err)
			}
			f.Interval = d
			if err := f.validate(); err != nil {
				return err
			}
			if f.child != "" {
				return runChildCommand(c.Context(), f)
			}
			return runStateBench(c.Context(), f)
		},
	}
	fs := c.Flags()
	fs.Int64Var(&f.Keys, "keys", 20_000_000, "keys of the measured state")
	fs.IntVar(&f.ValueBytes, "value-bytes", 100, "bytes of each key's value (at least 16)")
	fs.Float64Var(&f.Churn, "churn", 0.01, "fraction of the keys updated per checkpoint interval")
	fs.StringVar(&f.interval, "checkpoint-interval", "1s", "least time from the start of a churn phase to its checkpoint; 0: checkpoint as soon as the phase is processed")
	fs.IntVar(&f.Phases, "checkpoints", 5, "churn phases (each followed by a checkpoint) after the load")
	fs.StringVar(&f.Backend, "state-backend", config.BackendLSM, "state backend of the measured run: heap or lsm")
	fs.BoolVar(&f.Incremental, "incremental", false, "ask for incremental checkpoints (state.backend.incremental); reported as refused when the runtime cannot take them")
	fs.IntVarP(&f.Parallelism, "parallelism", "p", 2, "parallelism of the source and the keyed function")
	fs.Int64Var(&f.compareKeys, "compare-heap-keys", 1_000_000, "keys of the heap vs lsm throughput comparison; 0: skip it")
	fs.StringArrayVarP(&f.Defines, "define", "D", nil, "configuration override key=value for every run (repeatable), e.g. -D state.backend.lsm.block-cache-size=256mb")
	fs.StringVar(&f.dir, "dir", os.TempDir(), "folder for the runs' checkpoints and stores (a weir-bench-state-* folder is made in it)")
	fs.BoolVar(&f.keep, "keep", false, "keep the work folder")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	fs.StringVar(&f.CPUProfile, "cpuprofile", "", "write a CPU profile of the measured (checkpointed) run to this file")
	// The parent re-executes the binary with these for each measured job.
	fs.StringVar(&f.child, "child", "", "run one measured job: measure, restore or compare")
	fs.StringVar(&f.Dir, "work-dir", "", "the child's work folder")
	_ = fs.MarkHidden("child")
	_ = fs.MarkHidden("work-dir")
	return c
}

func (f *stateBenchFlags) validate() error {
	switch {
	case f.Keys < 1:
		return usagef("--keys must be at least 1, got %d", f.Keys)
	case f.ValueBytes < minValueBytes:
		return usagef("--value-bytes must be at least %d (the key and version each value starts with), got %d", minValueBytes, f.ValueBytes)
	case !(f.Churn > 0 && f.Churn <= 1):
		return usagef("--churn must be a fraction in (0, 1], got %v", f.Churn)
	case f.Phases < 1:
		return usagef("--checkpoints must be at least 1, got %d", f.Phases)
	case f.Parallelism < 1:
		return usagef("--parallelism must be at least 1, got %d", f.Parallelism)
	case f.compareKeys < 0:
		return usagef("--compare-heap-keys must not be negative, got %d", f.compareKeys)
	case f.Interval < 0:
		return usagef("--checkpoint-interval must not be negative, got %s", f.Interval)
	}
	if f.Backend != config.BackendHeap && f.Backend != config.BackendLSM {
		return usagef("--state-backend must be heap or lsm, got %q", f.Backend)
	}
	return nil
}

// runChildCommand is the child side: one run, its result as JSON on stdout.
func runChildCommand(ctx context.Context, f stateBenchFlags) error {
	if f.Dir == "" {
		return usagef("--child needs --work-dir")
	}
	f.Role = f.child
	switch f.Role {
	case roleMeasure, roleRestore, roleCompare:
	default:
		return usagef("--child must be %s, %s or %s, got %q", roleMeasure, roleRestore, roleCompare, f.Role)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	res, err := runStateChild(ctx, f.stateRunParams)
	if err != nil {
		return fmt.Errorf("bench state (%s, %s): %w", f.Role, f.Backend, err)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// runStateBench is the parent: it runs the children one after the other
// and assembles the report.
func runStateBench(ctx context.Context, f stateBenchFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	t0 := time.Now()
	work, err := os.MkdirTemp(f.dir, "weir-bench-state-*")
	if err != nil {
		return usagef("--dir: %v", err)
	}
	if f.keep {
		fmt.Fprintf(os.Stderr, "bench state: work folder %s (kept)\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	p := f.stateRunParams
	p.Dir = filepath.Join(work, "measure")
	p.Role = roleMeasure
	m, err := runStateChildProcess(ctx, p)
	if err != nil {
		return err
	}
	p.Role, p.CPUProfile = roleRestore, ""
	r, err := runStateChildProcess(ctx, p)
	if err != nil {
		return err
	}
	res := summarizeState(f, m, r)
	if f.compareKeys > 0 {
		cmp := &stateCompare{Keys: f.compareKeys}
		for _, b := range []string{config.BackendHeap, config.BackendLSM} {
			q := f.stateRunParams
			q.Role, q.Backend, q.Keys, q.Churn, q.Phases, q.CPUProfile, q.Incremental = roleCompare, b, f.compareKeys, 1, 1, "", false
			q.Dir = filepath.Join(work, "compare-"+b)
			out, err := runStateChildProcess(ctx, q)
			if err != nil {
				return err
			}
			t := stateThroughput{
				LoadRecordsPerSec:   perSec(out.LoadRecords, out.LoadSeconds),
				UpdateRecordsPerSec: perSec(out.UpdateRecords, out.UpdateSeconds),
				PeakRSSBytes:        out.PeakRSSBytes,
			}
			if b == config.BackendHeap {
				cmp.Heap = t
			} else {
				cmp.LSM = t
			}
			if err := os.RemoveAll(q.Dir); err != nil {
				return err
			}
		}
		cmp.LoadRatio = ratio(cmp.LSM.LoadRecordsPerSec, cmp.Heap.LoadRecordsPerSec)
		cmp.UpdateRatio = ratio(cmp.LSM.UpdateRecordsPerSec, cmp.Heap.UpdateRecordsPerSec)
		res.Compare = cmp
	}
	res.Seconds = time.Since(t0).Seconds()
	if f.asJSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	printStateResult(res)
	return nil
}

// summarizeState builds the report from the measure and restore runs.
func summarizeState(f stateBenchFlags, m, r stateRunResult) stateBenchResult {
	res := stateBenchResult{
		Benchmark: "state", Backend: f.Backend, Keys: f.Keys, ValueBytes: f.ValueBytes, Churn: f.Churn,
		CheckpointInterval: f.Interval.String(), Checkpoints: f.Phases, Parallelism: f.Parallelism,
		GoMemLimit: os.Getenv("GOMEMLIMIT"), IncrementalMode: m.IncrementalMode,
		IncrementalTarget:       incrementalTarget,
		UploadedBytesMeasuredBy: "checkpoint storage files: chk-N/ plus files new in shared/",
		RestoreMs:               r.RestoreMs, RestoredCheckpoint: r.RestoredCheckpoint,
		RestoreMeasuredBy:   "first record processed after the job started (the runtime has no restore-duration metric)",
		LoadRecordsPerSec:   perSec(m.LoadRecords, m.LoadSeconds),
		UpdateRecordsPerSec: perSec(m.UpdateRecords, m.UpdateSeconds),
		PeakRSSBytes:        m.PeakRSSBytes, RestorePeakRSSBytes: r.PeakRSSBytes,
		StoreBytes: m.StoreBytes, PerCheckpoint: m.Checkpoints,
	}
	var up []int64
	var dur []float64
	for _, cp := range m.Checkpoints {
		if cp.Phase == 0 {
			res.LoadCheckpointDurationMs = cp.DurationMs
			continue
		}
		up = append(up, cp.UploadedBytes)
		dur = append(dur, cp.DurationMs)
	}
	if n := len(m.Checkpoints); n > 0 {
		res.FullSizeBytes = m.Checkpoints[n-1].FullSizeBytes
	}
	res.IncrementalBytesPerCheckpoint = medianInt64(up)
	res.CheckpointDurationMs = medianFloat(dur)
	res.IncrementalFraction = ratio(float64(res.IncrementalBytesPerCheckpoint), float64(res.FullSizeBytes))
	res.IncrementalTargetMet = res.FullSizeBytes > 0 && res.IncrementalFraction <= incrementalTarget
	return res
}

func perSec(n int64, s float64) float64 {
	if s <= 0 {
		return 0
	}
	return float64(n) / s
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// runStateChildProcess re-executes this binary for one run and decodes the
// JSON it prints; its progress lines go to our stderr.
func runStateChildProcess(ctx context.Context, p stateRunParams) (stateRunResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return stateRunResult{}, fmt.Errorf("bench state: find this binary to run the %s job: %w", p.Role, err)
	}
	args := []string{"bench", "state", "--child", p.Role, "--work-dir", p.Dir,
		"--keys", fmt.Sprint(p.Keys), "--value-bytes", fmt.Sprint(p.ValueBytes),
		"--churn", fmt.Sprint(p.Churn), "--checkpoints", fmt.Sprint(p.Phases),
		"--checkpoint-interval", p.Interval.String(), "--state-backend", p.Backend,
		"--parallelism", fmt.Sprint(p.Parallelism), fmt.Sprintf("--incremental=%t", p.Incremental)}
	if p.CPUProfile != "" {
		args = append(args, "--cpuprofile", p.CPUProfile)
	}
	for _, d := range p.Defines {
		args = append(args, "-D", d)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return stateRunResult{}, fmt.Errorf("bench state: the %s run (%s backend, %d keys) failed: %w", p.Role, p.Backend, p.Keys, err)
	}
	var res stateRunResult
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		return stateRunResult{}, fmt.Errorf("bench state: the %s run printed no result: %w (%q)", p.Role, err, out.String())
	}
	return res, nil
}

func printStateResult(r stateBenchResult) {
	mb := func(n int64) float64 { return float64(n) / (1 << 20) }
	fmt.Printf("state  backend=%s keys=%d value-bytes=%d churn=%g checkpoints=%d interval=%s parallelism=%d incremental=%s\n",
		r.Backend, r.Keys, r.ValueBytes, r.Churn, r.Checkpoints, r.CheckpointInterval, r.Parallelism, r.IncrementalMode)
	fmt.Printf("  full state size          %10.1f MiB\n", mb(r.FullSizeBytes))
	fmt.Printf("  uploaded per checkpoint  %10.1f MiB  (%.1f%% of full; target ≤ %.0f%%: %s)\n",
		mb(r.IncrementalBytesPerCheckpoint), 100*r.IncrementalFraction, 100*r.IncrementalTarget, metOrMissed(r.IncrementalTargetMet))
	fmt.Printf("  checkpoint duration      %10.0f ms median (after the load: %.0f ms)\n", r.CheckpointDurationMs, r.LoadCheckpointDurationMs)
	fmt.Printf("  restore                  %10.0f ms  (%s)\n", r.RestoreMs, r.RestoreMeasuredBy)
	fmt.Printf("  load                     %10.0f records/s\n", r.LoadRecordsPerSec)
	fmt.Printf("  updates                  %10.0f records/s\n", r.UpdateRecordsPerSec)
	fmt.Printf("  peak RSS                 %10.1f MiB  (restore run: %.1f MiB)\n", mb(r.PeakRSSBytes), mb(r.RestorePeakRSSBytes))
	if r.StoreBytes > 0 {
		fmt.Printf("  lsm stores on disk       %10.1f MiB\n", mb(r.StoreBytes))
	}
	if c := r.Compare; c != nil {
		fmt.Printf("  heap vs lsm at %d keys:\n", c.Keys)
		fmt.Printf("    heap  load %10.0f/s  update %10.0f/s  peak RSS %.1f MiB\n", c.Heap.LoadRecordsPerSec, c.Heap.UpdateRecordsPerSec, mb(c.Heap.PeakRSSBytes))
		fmt.Printf("    lsm   load %10.0f/s  update %10.0f/s  peak RSS %.1f MiB\n", c.LSM.LoadRecordsPerSec, c.LSM.UpdateRecordsPerSec, mb(c.LSM.PeakRSSBytes))
		fmt.Printf("    lsm/heap  load %.2f  update %.2f\n", c.LoadRatio, c.UpdateRatio)
	}
}

func metOrMissed(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}
