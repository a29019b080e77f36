package weir

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/restart"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/vfs"
)

// Env is where a job is assembled and executed.
type Env struct {
	cfg              *Config
	graph            runtime.Graph
	logger           *slog.Logger
	faults           *faults.Injector
	status           *runtime.JobStatus
	from             string
	fs               vfs.FS
	allowNonRestored bool
	err              error // first error met while building the graph
}

// NewEnv returns an environment using cfg (nil: defaults).
func NewEnv(cfg *Config) *Env {
	if cfg == nil {
		cfg = NewConfig()
	}
	return &Env{cfg: cfg, logger: slog.New(slog.DiscardHandler), status: &runtime.JobStatus{}}
}

// Config returns the environment's configuration.
func (e *Env) Config() *Config { return e.cfg }

// SetLogger sets the structured logger (default: silent).
func (e *Env) SetLogger(l *slog.Logger) { e.logger = l }

// SetFaultInjector makes tasks fail at named fault points; for tests and
// the demo's --inject-failures.
func (e *Env) SetFaultInjector(i *faults.Injector) { e.faults = i }

// SetCheckpointFS replaces the filesystem under checkpoint storage; tests
// use it to inject disk-full errors and torn writes.
func (e *Env) SetCheckpointFS(fs vfs.FS) { e.fs = fs }

// RestoreFrom makes the job start from the given checkpoint (a chk-N
// folder or its _metadata file) instead of the newest retained one; an
// empty path keeps the newest retained one. allowNonRestoredState skips
// checkpointed state of operators the job no longer has instead of failing.
func (e *Env) RestoreFrom(path string, allowNonRestoredState bool) {
	e.from = path
	e.allowNonRestored = allowNonRestoredState
}

// Status returns live counters of the running job (records, checkpoints,
// restarts), for progress reports and metrics.
func (e *Env) Status() *runtime.JobStatus { return e.status }

func (e *Env) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// Execute runs the job until it ends (bounded sources), fails for good, or
// ctx is cancelled. A job started again with the same name and
// state.checkpoints.dir resumes from its newest retained checkpoint.
func (e *Env) Execute(ctx context.Context, jobName string) error {
	if e.err != nil {
		return e.err
	}
	if len(e.graph.Nodes) == 0 {
		return fmt.Errorf("job %q has no operators", jobName)
	}
	jc, err := e.jobConfig(jobName)
	if err != nil {
		return err
	}
	if err := e.resolveStorage(ctx, &jc); err != nil {
		return err
	}
	return runtime.Execute(ctx, &e.graph, jc)
}

func (e *Env) jobConfig(jobName string) (runtime.JobConfig, error) {
	c := e.cfg
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
	}
	return runtime.JobConfig{
		JobName:               jobName,
		CheckpointDir:         dir,
		FromPath:              e.from,
		AllowNonRestoredState: e.allowNonRestored,
		Checkpoint:            cc,
		AtLeastOnce:           c.String(config.CheckpointingMode) == config.ModeAtLeastOnce,
		Unaligned:             c.Bool(config.CheckpointingUnaligned),
		AlignedTimeout:        c.Duration(config.CheckpointingAlignedTimeout),
		MaxOverdraft:          c.Int(config.NetworkMaxOverdraft),
		MaxChannelStateBytes:  int64(c.Int(config.CheckpointingMaxChannelStateBytes)),
		NumRetained:           c.Int(config.CheckpointsNumRetained),
		BatchSize:             c.Int(config.BatchSize),
		BufferTimeout:         c.Duration(config.BufferTimeout),
		CreditsPerChannel:     c.Int(config.NetworkCreditsPerChannel),
		MaxParallelism:        c.Int(config.MaxParallelism),
		LocalTaskManagers:     c.Int(config.LocalTaskManagers),
		Restart:               strategy,
		Faults:                e.faults,
		StorageFS:             e.fs,
		Logger:                e.logger,
		Status:                e.status,
		StateBackend: state.BackendConfig{
			Type:          c.String(config.StateBackendType),
			Incremental:   c.Bool(config.StateBackendIncremental),
			LocalRecovery: c.Bool(config.StateBackendLocalRecovery),
			LSM: state.LSMConfig{
				Dir:            c.String(config.StateBackendLSMDir),
				BlockCacheSize: c.MemorySize(config.StateBackendLSMBlockCacheSize),
				MemtableSize:   c.MemorySize(config.StateBackendLSMMemtableSize),
			},
		},
	}, nil
}
