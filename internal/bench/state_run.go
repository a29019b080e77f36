package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
)

// One measured run of the state benchmark, in its own process (the parent
// re-executes the binary with --child), so that its peak RSS is its own.

// Roles of a child run.
const (
	roleMeasure = "measure" // load, then churn phases with a checkpoint after each
	roleRestore = "restore" // start from the measure run's last checkpoint
	roleCompare = "compare" // throughput only: load, one pass of updates, no checkpoints
)

// stateJobName is the job's name, shared by the measure and restore runs
// so that the restore run resumes from the measure run's checkpoints.
const stateJobName = "bench-state"

// stateRunParams are a child run's parameters (the parent's flags).
type stateRunParams struct {
	Role        string
	Keys        int64
	ValueBytes  int
	Churn       float64
	Phases      int // churn phases after the load (--checkpoints)
	Interval    time.Duration
	Backend     string
	Incremental bool
	Parallelism int
	Dir         string // work folder: checkpoints/ and lsm/ below it
	Defines     []string
	CPUProfile  string
}

// stateCheckpoint is one measured checkpoint.
type stateCheckpoint struct {
	ID    int64 `json:"id"`
	Phase int   `json:"phase"`
	// DurationMs is trigger to completion (the runtime's figure).
	DurationMs float64 `json:"duration_ms"`
	// FullSizeBytes is the runtime's state size of the checkpoint: the
	// bytes of every state file it references.
	FullSizeBytes int64 `json:"full_size_bytes"`
	// UploadedBytes is what this checkpoint wrote to checkpoint storage,
	// measured on disk (uploadMeter).
	UploadedBytes int64 `json:"uploaded_bytes"`
}

// stateRunResult is what a child prints (one JSON object on stdout).
type stateRunResult struct {
	Role            string            `json:"role"`
	Backend         string            `json:"backend"`
	Keys            int64             `json:"keys"`
	IncrementalMode string            `json:"incremental_mode"`
	LoadRecords     int64             `json:"load_records"`
	LoadSeconds     float64           `json:"load_seconds"`
	UpdateRecords   int64             `json:"update_records"`
	UpdateSeconds   float64           `json:"update_seconds"`
	Checkpoints     []stateCheckpoint `json:"checkpoints,omitempty"`
	// StoreBytes is the size of the LSM stores on local disk at the end.
	StoreBytes         int64   `json:"store_bytes,omitempty"`
	RestoreMs          float64 `json:"restore_ms,omitempty"`
	RestoredCheckpoint int64   `json:"restored_checkpoint,omitempty"`
	PeakRSSBytes       int64   `json:"peak_rss_bytes"`
}

// runStateChild performs one run. An --incremental run that the runtime
// refuses (incremental checkpoints not available in this build) is run
// again with full checkpoints and says so in IncrementalMode.
func runStateChild(ctx context.Context, p stateRunParams) (stateRunResult, error) {
	if p.CPUProfile != "" {
		f, err := os.Create(p.CPUProfile)
		if err != nil {
			return stateRunResult{}, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return stateRunResult{}, err
		}
		defer pprof.StopCPUProfile()
	}
	mode := "off"
	if p.Incremental {
		mode = "on"
	}
	res, err := runStateJob(ctx, p)
	if err != nil && p.Incremental && incrementalRefused(err) {
		mode = "refused: " + err.Error()
		p.Incremental = false
		res, err = runStateJob(ctx, p)
	}
	res.IncrementalMode = mode
	res.PeakRSSBytes = peakRSS()
	return res, err
}

// incrementalRefused reports whether the job was refused because this
// build cannot take incremental checkpoints. The runtime has no sentinel
// for it; its message names the key.
func incrementalRefused(err error) bool {
	return strings.Contains(err.Error(), config.StateBackendIncremental) && strings.Contains(err.Error(), "not available")
}

func stateEnv(p stateRunParams) (*weir.Env, error) {
	cfg := weir.NewConfig()
	if err := hooks.Config(cfg).SetOverrides(p.Defines); err != nil {
		return nil, usagef("-D: %v", err)
	}
	set := []struct{ k, v string }{
		{config.ParallelismDefault, fmt.Sprint(p.Parallelism)},
		{config.CheckpointingInterval, "0ms"}, // the driver triggers every checkpoint
		{config.CheckpointingTimeout, "2h"},
		{config.CheckpointsDir, filepath.Join(p.Dir, "checkpoints")},
		{config.CheckpointsNumRetained, "1"},
		{config.RestartStrategyType, config.RestartNone}, // a failed check must fail the run
		{config.StateBackendType, p.Backend},
		{config.StateBackendLSMDir, filepath.Join(p.Dir, "lsm")},
	}
	if p.Incremental {
		set = append(set, struct{ k, v string }{config.StateBackendIncremental, "true"})
	}
	for _, kv := range set {
		if err := cfg.Set(kv.k, kv.v); err != nil {
			return nil, fmt.Errorf("state bench: set %s: %w", kv.k, err)
		}
	}
	return weir.NewEnv(weir.WithConfig(cfg)), nil
}

// stateDriver runs the job of one child and paces its phases.
type stateDriver struct {
	p      stateRunParams
	env    *weir.Env
	ctl    *stateCtl
	cancel context.CancelFunc
	done   chan struct{} // closed when Execute returned
	jobErr error         // what it returned; read after done
}

func runStateJob(ctx context.Context, p stateRunParams) (stateRunResult, error) {
	sched, err := newChurnSchedule(p.Keys, p.Churn)
	if err != nil {
		return stateRunResult{}, usagef("%v", err)
	}
	if err := os.MkdirAll(filepath.Join(p.Dir, "lsm"), 0o755); err != nil {
		return stateRunResult{}, err
	}
	last := p.Phases
	if p.Role == roleRestore {
		last++ // the phase after the checkpoint it restores
	}
	env, err := stateEnv(p)
	if err != nil {
		return stateRunResult{}, err
	}
	ctl := newStateCtl(sched, p.ValueBytes, last, p.Parallelism)
	buildStateJob(env, ctl)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := &stateDriver{p: p, env: env, ctl: ctl, cancel: cancel, done: make(chan struct{})}
	res := stateRunResult{Role: p.Role, Backend: p.Backend, Keys: p.Keys}
	if p.Role == roleRestore {
		ctl.release(last)
	} else {
		ctl.release(0)
	}
	t0 := time.Now()
	go func() {
		d.jobErr = env.Execute(ctx, stateJobName)
		close(d.done)
	}()
	if p.Role == roleRestore {
		err = d.restore(&res, t0, last)
	} else {
		err = d.phases(&res, t0)
	}
	if err != nil {
		cancel()
		<-d.done
		if d.jobErr != nil && !errors.Is(d.jobErr, context.Canceled) {
			return res, d.jobErr // the job's own failure is the cause
		}
		return res, err
	}
	if p.Backend == config.BackendLSM {
		// Before the cancel: Close removes the stores.
		res.StoreBytes, _ = dirSize(filepath.Join(p.Dir, "lsm"))
	}
	cancel()
	<-d.done
	if err := d.jobErr; err != nil && !errors.Is(err, context.Canceled) {
		return res, fmt.Errorf("job after the last phase: %w", err)
	}
	return res, nil
}

// phases runs the load and the churn phases, with a checkpoint after each
// unless the role only measures throughput.
func (d *stateDriver) phases(res *stateRunResult, t0 time.Time) error {
	sched := d.ctl.sched
	meter := newUploadMeter(filepath.Join(d.p.Dir, "checkpoints", stateJobName))
	for ph := 0; ph <= d.p.Phases; ph++ {
		start := t0
		if ph > 0 {
			start = time.Now()
			d.ctl.release(ph)
		}
		if err := d.waitPhase(ph, sched.recordsThrough(ph)); err != nil {
			return err
		}
		el := time.Since(start).Seconds()
		if ph == 0 {
			res.LoadRecords, res.LoadSeconds = sched.phaseLen(0), el
		} else {
			res.UpdateRecords += sched.phaseLen(ph)
			res.UpdateSeconds += el
		}
		if d.p.Role == roleCompare {
			continue
		}
		if ph > 0 && d.p.Interval > 0 {
			if err := d.sleepUntil(start.Add(d.p.Interval)); err != nil {
				return err
			}
		}
		cp, err := d.checkpoint(ph, meter)
		if err != nil {
			return err
		}
		res.Checkpoints = append(res.Checkpoints, cp)
		fmt.Fprintf(os.Stderr, "bench state: %s phase %d: %d records in %.2fs; checkpoint %d: %.0f ms, full %d bytes, uploaded %d bytes\n",
			d.p.Backend, ph, sched.phaseLen(ph), el, cp.ID, cp.DurationMs, cp.FullSizeBytes, cp.UploadedBytes)
	}
	return nil
}

// restore measures the time from starting the job to the first record its
// keyed function processes: the runtime restores keyed state before it
// opens the function, so this covers loading and verifying the checkpoint,
// rebuilding the state and starting the tasks. Then it runs the phase after
// the checkpoint, whose updates check every value they replace.
func (d *stateDriver) restore(res *stateRunResult, t0 time.Time, phase int) error {
	select {
	case <-d.ctl.first:
	case <-d.done:
		return d.ended()
	}
	res.RestoreMs = float64(d.ctl.firstAt.Load()-t0.UnixNano()) / 1e6
	res.RestoredCheckpoint = hooks.Plan(d.env).Status.RestoredCheckpoint.Load()
	if res.RestoredCheckpoint == 0 {
		return errors.New("restore run: the job found no checkpoint to restore (was the measure run's folder removed?)")
	}
	start := time.Now()
	n := d.ctl.sched.phaseLen(phase)
	if err := d.waitPhase(phase, n); err != nil {
		return err
	}
	res.UpdateRecords, res.UpdateSeconds = n, time.Since(start).Seconds()
	return nil
}

// waitPhase waits until every source subtask emitted phase ph and the
// keyed function processed processed records in this attempt. The runtime
// counts records in per task and batch but signals nothing, so the count
// is polled every millisecond; the source vertex counts no records in.
func (d *stateDriver) waitPhase(ph int, processed int64) error {
	for done := 0; done < d.p.Parallelism; {
		select {
		case got := <-d.ctl.phaseDone:
			if got == ph {
				done++
			}
		case <-d.done:
			return d.ended()
		}
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		var in int64
		for _, t := range hooks.Plan(d.env).Status.Tasks() {
			in += t.RecordsIn
		}
		if in >= processed {
			return nil
		}
		select {
		case <-tick.C:
		case <-d.done:
			return d.ended()
		}
	}
}

func (d *stateDriver) sleepUntil(t time.Time) error {
	w := time.Until(t)
	if w <= 0 {
		return nil
	}
	tm := time.NewTimer(w)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-d.done:
		return d.ended()
	}
}

// checkpoint triggers a checkpoint, waits for its completion (sources are
// notified of it after the runtime recorded its statistics) and measures it.
func (d *stateDriver) checkpoint(ph int, meter *uploadMeter) (stateCheckpoint, error) {
	st := hooks.Plan(d.env).Status
	id, err := hooks.Plan(d.env).Control.TriggerCheckpoint(context.Background())
	if err != nil {
		return stateCheckpoint{}, fmt.Errorf("trigger the checkpoint after phase %d: %w", ph, err)
	}
	// A failed checkpoint notifies nobody; look at the history meanwhile.
	look := time.NewTicker(50 * time.Millisecond)
	defer look.Stop()
	for done := false; !done; {
		select {
		case c := <-d.ctl.completed:
			done = c >= int64(id)
		case <-look.C:
			if s, ok := checkpointStats(st, int64(id)); ok && s.Status == jobstatus.CheckpointFailed {
				return stateCheckpoint{}, fmt.Errorf("checkpoint %d after phase %d failed: %s", id, ph, s.FailureReason)
			}
		case <-d.done:
			return stateCheckpoint{}, d.ended()
		}
	}
	s, ok := checkpointStats(st, int64(id))
	if !ok {
		return stateCheckpoint{}, fmt.Errorf("checkpoint %d: not in the job's checkpoint history", id)
	}
	up, err := meter.measure(int64(id))
	if err != nil {
		return stateCheckpoint{}, err
	}
	return stateCheckpoint{ID: int64(id), Phase: ph, DurationMs: float64(s.Duration) / 1e6, FullSizeBytes: s.StateSize, UploadedBytes: up}, nil
}

func checkpointStats(st *jobstatus.JobStatus, id int64) (jobstatus.CheckpointStats, bool) {
	for _, s := range st.Checkpoints(time.Now()) {
		if int64(s.ID) == id {
			return s, true
		}
	}
	return jobstatus.CheckpointStats{}, false
}

// ended turns the end of a job that should still run into an error.
func (d *stateDriver) ended() error {
	err := d.jobErr
	if err == nil {
		return errors.New("the job ended before the benchmark finished")
	}
	return fmt.Errorf("job failed: %w", err)
}
