// Package plan holds what a weir.Env assembles before it runs: the logical
// graph, the configuration and the run options, and turns them into what
// the runtime executes (a dataflow.Graph and a filled runtime.JobConfig).
//
// The public Env wraps a Plan; the module's own layers that build a job
// without running it in this process (app's cluster roles, the cluster
// tests) read the Plan through internal/hooks and call Resolve, instead of
// intercepting Env's execution.
//
// Owns: the plan of one Env and its resolution into a dataflow.Graph and
// JobConfig. Must not touch: the public API (package weir wraps it) or the
// running of jobs beyond calling the runtime.
package plan

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/autoscaler"

	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/restart"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/runtime/weakrt"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/vfs"
)

// Plan is a job being assembled. It is not safe for concurrent use: the
// graph is built on one goroutine, then resolved.
type Plan struct {
	// Graph is the logical graph the typed API appends nodes to.
	Graph dataflow.Graph
	// Config is the engine configuration (never nil).
	Config *config.Config
	// Logger receives the job's log (never nil; silent by default).
	Logger *slog.Logger
	// FromPath is the checkpoint or savepoint to restore ("" : the newest
	// retained checkpoint of the job, if any).
	FromPath string
	// AllowNonRestoredState skips checkpointed state of operators the job
	// no longer has instead of failing.
	AllowNonRestoredState bool
	// Rerun runs a job from scratch although its folder records a run
	// that FINISHED (runtime.JobConfig.Rerun, weir.WithRerunFinished).
	Rerun bool
	// Status receives the live counters of the job's runs (never nil).
	Status *jobstatus.JobStatus
	// Control takes commands (a checkpoint, a savepoint, a stop) to the
	// running attempt of the job whose status is Status (never nil).
	Control *runtime.JobControl

	// Faults makes tasks fail at named fault points (tests, the demo's
	// --inject-failures); nil injects nothing.
	Faults *faults.Injector
	// CheckpointFS replaces the filesystem under checkpoint storage
	// (tests inject disk-full errors and torn writes); nil is the OS's,
	// or S3 for s3:// storage.
	CheckpointFS vfs.FS
	// Now replaces the clock the job's runtime reads (runtime.JobConfig.Now):
	// processing time is its wall reading, every timeout, interval and
	// backoff its monotonic one. Tests inject a clock whose wall reading
	// jumps (internal/testutil/clocktest); nil is time.Now.
	Now func() time.Time
	// Executor runs the resolved job in place of RunLocal; app's local
	// runs set it to print the start line and to record a finished job
	// only after their report. nil is RunLocal.
	Executor func(ctx context.Context, g *dataflow.Graph, jc runtime.JobConfig) error
	// TransactionTimeout is the shortest transaction timeout the job's
	// two-phase-commit sinks declare (0: none does): while checkpoint
	// storage fails, the job fails before their open transactions would
	// outlive it.
	TransactionTimeout time.Duration

	err error // first error met while building the graph
}

// New returns an empty plan using cfg. Its logger passes warnings and
// errors to slog.Default() (warnHandler) until the program sets one.
func New(cfg *config.Config) *Plan {
	st := &jobstatus.JobStatus{}
	return &Plan{Config: cfg, Logger: slog.New(warnHandler{}), Status: st, Control: runtime.NewJobControl(st)}
}

// ResetStatus starts Status over for another run of the plan's job
// (jobstatus.Recorder.Reset): the Env that owns the status resets it
// before each run. Nothing may run on it meanwhile.
func (p *Plan) ResetStatus() { jobstatus.RecorderOf(p.Status).Reset() }

// Fail records err as a problem of the graph being built; Resolve returns
// the first one.
func (p *Plan) Fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// Err returns the first error Fail recorded.
func (p *Plan) Err() error { return p.err }

// Resolve checks the plan and returns the graph and the job configuration
// the runtime runs for job jobName: configuration keys translated,
// checkpoint storage located (an s3:// URL probed now, so that bad
// credentials fail here), defaults filled. It runs nothing.
func (p *Plan) Resolve(ctx context.Context, jobName string) (*dataflow.Graph, runtime.JobConfig, error) {
	if p.err != nil {
		return nil, runtime.JobConfig{}, p.err
	}
	if len(p.Graph.Nodes) == 0 {
		return nil, runtime.JobConfig{}, fmt.Errorf("job %q has no operators", jobName)
	}
	jc, err := p.jobConfig(jobName)
	if err != nil {
		return nil, runtime.JobConfig{}, err
	}
	if err := p.resolveStorage(ctx, &jc); err != nil {
		return nil, runtime.JobConfig{}, err
	}
	if err := jc.Prepare(); err != nil {
		return nil, runtime.JobConfig{}, err
	}
	return &p.Graph, jc, nil
}

func (p *Plan) jobConfig(jobName string) (runtime.JobConfig, error) {
	c := p.Config
	if strings.ContainsAny(jobName, `/\`) || jobName == "" || jobName == "." || jobName == ".." {
		return runtime.JobConfig{}, fmt.Errorf("job name %q must be a non-empty name without path separators", jobName)
	}
	strategy, err := restart.FromConfig(c, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return runtime.JobConfig{}, err
	}
	dir := c.String(config.CheckpointsDir)
	if dir == "" {
		dir = filepath.Join("weir-data", "checkpoints")
	}
	dir, err = checkpointDirScheme(dir)
	if err != nil {
		return runtime.JobConfig{}, err
	}
	cc := coordinator.Config{
		Interval:          c.Duration(config.CheckpointingInterval),
		Timeout:           c.Duration(config.CheckpointingTimeout),
		MinPause:          c.Duration(config.CheckpointingMinPause),
		MaxConcurrent:     c.Int(config.CheckpointingMaxConcurrent),
		TolerableFailures: c.Int(config.CheckpointingTolerableFailures),

		StorageFailureTimeout: c.Duration(config.CheckpointingStorageFailureTimeout),
		StorageMaxBackoff:     c.Duration(config.CheckpointingStorageMaxBackoff),
		TransactionTimeout:    p.TransactionTimeout,
	}
	return runtime.JobConfig{
		JobName:               jobName,
		CheckpointDir:         dir,
		FromPath:              p.FromPath,
		Rerun:                 p.Rerun,
		AllowNonRestoredState: p.AllowNonRestoredState,
		Checkpoint:            cc,
		AtLeastOnce:           c.String(config.CheckpointingMode) == config.ModeAtLeastOnce,
		Weak:                  c.String(config.CheckpointingMode) == config.ModeWeak,
		WeakLogMaxRecords:     c.Int(config.WeakInFlightLogMaxRecords),
		WeakLogSnapshot:       c.Bool(config.WeakInFlightLogSnapshot),
		Recovery:              weakrt.Mode{}, // used only with Weak
		Autoscaler:            autoscalerConfig(c),
		Unaligned:             c.Bool(config.CheckpointingUnaligned),
		AlignedTimeout:        c.Duration(config.CheckpointingAlignedTimeout),
		MaxOverdraft:          c.Int(config.NetworkMaxOverdraft),
		MaxChannelStateBytes:  int64(c.Int(config.CheckpointingMaxChannelStateBytes)),
		NumRetained:           c.Int(config.CheckpointsNumRetained),
		BatchSize:             c.Int(config.BatchSize),
		BufferTimeout:         c.Duration(config.BufferTimeout),
		AutoWatermarkInterval: c.Duration(config.AutoWatermarkInterval),
		CreditsPerChannel:     c.Int(config.NetworkCreditsPerChannel),
		MaxParallelism:        c.Int(config.MaxParallelism),
		LocalTaskManagers:     c.Int(config.LocalTaskManagers),
		Restart:               strategy,
		Faults:                p.Faults,
		StorageFS:             p.CheckpointFS,
		Now:                   p.Now,
		Logger:                p.Logger,
		Status:                p.Status,
		Control:               p.Control,
		StateBackend: state.BackendConfig{
			Type:          c.String(config.StateBackendType),
			Incremental:   c.Bool(config.StateBackendIncremental),
			LocalRecovery: c.Bool(config.StateBackendLocalRecovery),
			LSM:           LSMConfig(c),
		},
	}, nil
}

// LSMConfig is the state.backend.lsm.* part of c, as the LSM backend takes
// it (lsm.FromConfig).
func LSMConfig(c *config.Config) state.LSMConfig {
	return state.LSMConfig{
		Dir:            c.String(config.StateBackendLSMDir),
		BlockCacheSize: c.MemorySize(config.StateBackendLSMBlockCacheSize),
		MemtableSize:   c.MemorySize(config.StateBackendLSMMemtableSize),
		// 0 in the configuration turns the buffer off; 0 here is the
		// backend's default.
		WriteBufferSize: offIfZero(c.MemorySize(config.StateBackendLSMWriteBufferSize)),
	}
}

// offIfZero maps a size whose 0 means off in the configuration to the
// backend's convention, where 0 is the default and negative is off.
func offIfZero(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

// autoscalerConfig is the job.autoscaler.* part of c.
func autoscalerConfig(c *config.Config) runtime.AutoscalerConfig {
	return runtime.AutoscalerConfig{
		Enabled:  c.Bool(config.AutoscalerEnabled),
		Interval: c.Duration(config.AutoscalerInterval),
		Rule: autoscaler.Config{
			TargetUtilization: c.Float(config.AutoscalerTargetUtilization),
			Boundary:          c.Float(config.AutoscalerBoundary),
			MetricsWindow:     c.Duration(config.AutoscalerMetricsWindow),
			Stabilization:     c.Duration(config.AutoscalerStabilization),
			CatchUp:           c.Duration(config.AutoscalerCatchUp),
			ScaleDownInterval: c.Duration(config.AutoscalerScaleDownInterval),
			MaxScaleDown:      c.Float(config.AutoscalerMaxScaleDown),
			MaxScaleUp:        c.Float(config.AutoscalerMaxScaleUp),
			BackpressureLimit: c.Float(config.AutoscalerBackpressureLimit),
		},
	}
}
