package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobmaster"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/restart"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/vfs"
)

// JobConfig configures one job execution.
type JobConfig struct {
	// JobName names the job's folder in checkpoint storage; a process
	// started again with the same name and storage resumes the job.
	JobName string
	// Rescaling, if set, is the in-place rescale this run carries out:
	// once all its tasks run, the JobMaster reports the pause since the
	// request (log, jobstatus.JobStatus.LastRescale).
	Rescaling *RescaleStart
	// CheckpointDir is the checkpoint storage root (state.checkpoints.dir).
	CheckpointDir string
	// FromPath, if set, is a checkpoint (chk-N folder or its _metadata) to
	// start from instead of the newest retained one.
	FromPath string
	// Rerun lets a run from scratch start although the job's folder
	// records a run that FINISHED (CheckFinished): the job writes its
	// whole output again (--rerun), and its own finish replaces the
	// record.
	Rerun bool
	// AllowNonRestoredState skips checkpointed state whose operator uid is
	// not in the job instead of failing.
	AllowNonRestoredState bool
	Checkpoint            coordinator.Config
	// AtLeastOnce selects barrier tracking without alignment.
	AtLeastOnce bool
	// Weak selects WEAKLY_CONSISTENT: no barriers, per-task snapshots
	// triggered by the JobMaster, single-task failover, and per-channel
	// in-flight logs at the producers (docs/weak-consistency.md).
	Weak bool
	// WeakLogMaxRecords bounds each output channel's in-flight log, in
	// records (execution.checkpointing.weak.in-flight-log.max-records).
	WeakLogMaxRecords int
	// WeakLogSnapshot makes each task's snapshot store what its output
	// logs retain (execution.checkpointing.weak.in-flight-log.snapshot),
	// so a lost TaskManager's logs are rebuilt from it.
	WeakLogSnapshot bool
	// Recovery is the runtime of the WEAKLY_CONSISTENT mode, required
	// with Weak and unused without: internal/runtime/weakrt.Mode, set
	// where the configuration is resolved (internal/plan). A field, not
	// an import, because that package imports this one.
	Recovery RecoveryMode
	// Autoscaler, when Enabled, lets the autoscaler rescale the job in
	// place (autoscale.go).
	Autoscaler AutoscalerConfig
	// Unaligned selects unaligned checkpoints
	// (execution.checkpointing.unaligned.enabled): barriers overtake
	// in-flight records, which are stored as channel state.
	Unaligned bool
	// AlignedTimeout, with Unaligned, starts each checkpoint aligned and
	// switches it to unaligned after this long; 0 is unaligned at once.
	AlignedTimeout time.Duration
	// MaxOverdraft is the number of batches a task may send per channel
	// beyond its credits to finish the batch it is processing
	// (taskmanager.network.max-overdraft-buffers-per-channel).
	MaxOverdraft int
	// MaxChannelStateBytes bounds one subtask's channel state in one
	// checkpoint; beyond it the checkpoint is declined.
	MaxChannelStateBytes int64
	// NumRetained is state.checkpoints.num-retained.
	NumRetained int
	BatchSize   int
	// BufferTimeout is execution.buffer-timeout.interval: a partly filled
	// output batch is sent after at most this long (0: after every batch).
	BufferTimeout time.Duration
	// AutoWatermarkInterval is pipeline.auto-watermark-interval: how often
	// watermark generators emit periodically (0: never).
	AutoWatermarkInterval time.Duration
	CreditsPerChannel     int
	MaxParallelism        int
	Restart               restart.Strategy
	Faults                *faults.Injector
	// StorageFS replaces the filesystem under checkpoint storage (tests
	// inject disk-full and torn writes through it); nil is the OS.
	StorageFS vfs.FS
	// Locations maps s3:// and other non-local locations to storage paths
	// and back; nil when every location is a local path.
	Locations Locations
	Logger    *slog.Logger
	// Status is the job's read model, which the runtime records into
	// (jobstatus.RecorderOf); nil: a status of its own.
	Status *jobstatus.JobStatus
	// Control takes commands to the job's running attempt: a
	// NewJobControl over Status, held by the callers that command the job
	// (weir.Job, REST); nil: one of its own, which nobody else holds.
	Control *JobControl
	// Now is the clock; time.Now when nil. Its wall reading (UnixMilli)
	// is processing time; every timeout, interval, backoff and heartbeat
	// is a difference of its values (Sub, Add, Before), which Go takes on
	// the monotonic reading, so a step of the wall clock moves processing
	// time only (docs/event-time.md, "When the wall clock jumps"). An
	// injected clock must keep time.Now's monotonic reading, as
	// internal/testutil/clocktest does; never round or serialize a time
	// that a duration is later taken from.
	Now func() time.Time
	// StateBackend selects the keyed state backend (state.backend.*);
	// keyed operators find it in OperatorContext.StateBackend.
	StateBackend state.BackendConfig
	// LocalTaskManagers is the number of TaskExecutors local mode runs
	// (minicluster.number-of-taskmanagers; 0 means 1). Above 1, each has
	// its own data plane on loopback and subtask i runs on executor
	// i mod LocalTaskManagers, so every exchange between executors crosses
	// TCP serialized, as in a cluster.
	LocalTaskManagers int

	// resumeFrom, set by NewClusterJob for a job a previous JobManager
	// ran, is the first checkpoint id that run took (see
	// initialRestorePoint).
	resumeFrom checkpoint.ID
	// reservedIDs, set by NewClusterJob, is the bound below which a
	// previous run may have used checkpoint ids: this run starts there.
	reservedIDs checkpoint.ID
	// registry, set by NewClusterJob under high availability (tests set
	// it for local runs too), registers completed checkpoints: a
	// checkpoint is complete only once registered, and only registered
	// ones are restored. nil: a written metadata completes a checkpoint.
	registry CheckpointRegistry
	// crashPoint, set by NewClusterJob, is called at the named crash
	// points (CrashAfterMetadata, ...); nil: none.
	crashPoint func(name string)
}

func (c *JobConfig) fill() error {
	if c.JobName == "" {
		return errors.New("job name is empty")
	}
	if c.CheckpointDir == "" {
		return errors.New("no checkpoint storage: set state.checkpoints.dir (--state-dir)")
	}
	if err := c.Checkpoint.Validate(); err != nil {
		return err
	}
	if c.NumRetained < 1 {
		return fmt.Errorf("state.checkpoints.num-retained must be at least 1, got %d", c.NumRetained)
	}
	if c.BatchSize < 1 {
		c.BatchSize = 1024
	}
	if c.CreditsPerChannel < 1 {
		c.CreditsPerChannel = 4
	}
	if c.MaxOverdraft < 0 {
		return fmt.Errorf("taskmanager.network.max-overdraft-buffers-per-channel must be at least 0, got %d", c.MaxOverdraft)
	}
	if c.MaxChannelStateBytes <= 0 {
		c.MaxChannelStateBytes = 256 << 20
	}
	if c.Weak {
		if c.Recovery == nil {
			return errors.New("execution.checkpointing.mode WEAKLY_CONSISTENT needs its runtime: JobConfig.Recovery is nil (set it to weakrt.Mode{}, package internal/runtime/weakrt)")
		}
		if c.Unaligned {
			return errors.New("execution.checkpointing.unaligned.enabled needs execution.checkpointing.mode EXACTLY_ONCE: WEAKLY_CONSISTENT sends no barriers, so there is nothing to make unaligned; drop one of the two settings")
		}
		if c.StateBackend.Incremental {
			return errors.New("state.backend.incremental with execution.checkpointing.mode WEAKLY_CONSISTENT: each task's snapshot is its own checkpoint, and the shared files of incremental snapshots are tracked per job-wide checkpoint; set state.backend.incremental false or use EXACTLY_ONCE")
		}
		if c.WeakLogMaxRecords < 1 {
			c.WeakLogMaxRecords = 1_000_000
		}
	}
	if c.Unaligned {
		// As in Flink: at-least-once has no alignment to skip, and a
		// priority barrier of checkpoint N+1 would overtake N's barriers
		// and subsume N everywhere.
		if c.AtLeastOnce {
			return errors.New("execution.checkpointing.unaligned.enabled needs execution.checkpointing.mode EXACTLY_ONCE: at-least-once checkpoints never align, so there is nothing to make unaligned; drop one of the two settings")
		}
		if c.Checkpoint.MaxConcurrent > 1 {
			return fmt.Errorf("execution.checkpointing.unaligned.enabled needs execution.checkpointing.max-concurrent-checkpoints 1, got %d: a newer unaligned barrier would overtake the older checkpoint's barriers; set it to 1", c.Checkpoint.MaxConcurrent)
		}
	} else if c.AlignedTimeout > 0 {
		return fmt.Errorf("execution.checkpointing.aligned-checkpoint-timeout %s needs execution.checkpointing.unaligned.enabled true: the timeout switches an aligned checkpoint to unaligned; enable unaligned checkpoints or remove the timeout", c.AlignedTimeout)
	}
	if c.MaxParallelism == 0 {
		c.MaxParallelism = 128
	}
	if c.Autoscaler.Enabled && c.Weak {
		return errors.New("job.autoscaler.enabled needs execution.checkpointing.mode EXACTLY_ONCE or AT_LEAST_ONCE: a WEAKLY_CONSISTENT job has no consistent checkpoint to rescale from; disable one of the two")
	}
	if c.LocalTaskManagers < 0 {
		return fmt.Errorf("minicluster.number-of-taskmanagers must be at least 1, got %d", c.LocalTaskManagers)
	}
	if c.Restart == nil {
		c.Restart = restart.NewNone()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Status == nil {
		c.Status = &jobstatus.JobStatus{}
	}
	if c.Control == nil {
		c.Control = NewJobControl(c.Status)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// recorder is where the runtime records the job's status.
func (c *JobConfig) recorder() *jobstatus.Recorder { return jobstatus.RecorderOf(c.Status) }

// JobFailedError is returned when a job fails for good: its restart
// strategy declined another attempt. The Machine (internal/jobmaster)
// builds it.
type JobFailedError = jobmaster.JobFailedError

// Execute runs the job until it finishes, fails for good, or ctx ends: the
// job's JobMaster and one TaskExecutor in this process, connected by the
// local gateways (direct calls one way, the JobMaster's inbox the other).
// The JobMaster restores, deploys the tasks, coordinates checkpoints and
// restarts a failed region; cluster mode runs the same two pieces in
// different processes.
func Execute(ctx context.Context, g *dataflow.Graph, cfg JobConfig) error {
	if err := cfg.fill(); err != nil {
		return err
	}
	var as *autoscaleDriver
	if cfg.Autoscaler.Enabled {
		var err error
		as, err = newAutoscaleDriver(cfg.Autoscaler, cfg.Status, cfg.Control.Rescale, cfg.Logger, cfg.Now)
		if err != nil {
			return err
		}
		actx, cancel := context.WithCancel(ctx)
		defer cancel()
		go as.run(actx)
	}
	for {
		next, started, err := executeOnce(ctx, g, cfg, as)
		if err != nil || next == nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err // cancelled while it was being rescaled
		}
		// Rescaled in place: run again at the new parallelism from the
		// job's newest checkpoint, the one the rescale took (not the
		// --from point, which this run is past).
		g, cfg.FromPath, cfg.resumeFrom, cfg.Rescaling = next, "", 0, started
		cfg.recorder().SetState(jobstatus.StateRestarting, cfg.Now())
	}
}

// executeOnce runs g until it ends, or until it stopped to be rescaled:
// then it returns the graph at the new parallelism and the rescale.
func executeOnce(ctx context.Context, g *dataflow.Graph, cfg JobConfig, as *autoscaleDriver) (*dataflow.Graph, *RescaleStart, error) {
	jm, store, err := newJob(ctx, g, &cfg)
	if err != nil {
		return nil, nil, err
	}
	if as != nil {
		if err := as.attach(jm.jg); err != nil {
			return nil, nil, err
		}
	}
	jg := jm.jg
	resolve := func(spec deployment.JobSpec, _ string) (*PreparedJob, error) {
		if spec.Name != cfg.JobName {
			return nil, fmt.Errorf("local mode runs job %s only", cfg.JobName)
		}
		return &PreparedJob{Graph: jg, Config: cfg, Store: store}, nil
	}
	tes, stop, err := startLocalExecutors(cfg, &localJobMaster{job: cfg.JobName, in: jm.in}, resolve)
	if err != nil {
		return nil, nil, err
	}
	defer stop()
	// Slot sharing: logical slot i runs subtask i of every vertex, and
	// slot i lives on executor i mod n.
	gws := make([]deployment.TaskManagerGateway, len(tes))
	for i, te := range tes {
		gws[i] = te
	}
	jm.place = newLocalPlacement(gws)
	cfg.recorder().SetTaskSource(func() []jobstatus.TaskStats { return reportAll(tes, cfg.JobName) })
	jm.rescaleGraph = func(r jobstatus.Rescale) (*dataflow.Graph, map[string]int, error) {
		return rescaledGraph(g, jg, r, cfg.MaxParallelism)
	}
	if err := jm.run(ctx); err != nil || !jm.rescaleDone {
		return nil, nil, err
	}
	return jm.rescaled.graph, jm.rescaleStart(), nil
}

// newJob builds the job graph, opens checkpoint storage (removing what
// incomplete checkpoints left), finds the restore point and checks that
// the graph can use it, and returns the job's JobMaster, started. cfg is
// filled with defaults.
func newJob(ctx context.Context, g *dataflow.Graph, cfg *JobConfig) (*JobMaster, *storage.FS, error) {
	if err := cfg.fill(); err != nil {
		return nil, nil, err
	}
	jg, err := dataflow.BuildJobGraph(g, cfg.MaxParallelism)
	if err != nil {
		return nil, nil, err
	}
	var sopts []storage.Option
	if cfg.StorageFS != nil {
		sopts = append(sopts, storage.WithFS(cfg.StorageFS))
	}
	store, err := storage.Open(cfg.CheckpointDir, cfg.JobName, sopts...)
	if err != nil {
		return nil, nil, err
	}
	if err := store.CleanIncomplete(); err != nil {
		return nil, nil, fmt.Errorf("clean incomplete checkpoints in %s: %w", store.JobDir(), err)
	}
	jm := newJobMaster(*cfg, jg, store)
	if err := jm.initShared(ctx); err != nil {
		return nil, nil, err
	}
	initial, next, err := jm.initialRestorePoint(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := initial.checkOperators(jg, cfg.AllowNonRestoredState); err != nil {
		return nil, nil, err
	}
	if err := initial.checkChannelState(jg); err != nil {
		return nil, nil, err
	}
	if err := initial.checkStates(jg, cfg.AllowNonRestoredState); err != nil {
		return nil, nil, err
	}
	jm.start(initial, max(next, cfg.reservedIDs))
	return jm, store, nil
}

// snapshotsOnBarriers reports whether the job's tasks snapshot when a
// barrier passes (exactly-once and at-least-once), rather than each on
// the JobMaster's per-task schedule (WEAKLY_CONSISTENT): the task's
// barrier handler and its recovery follow from it.
func (c *JobConfig) snapshotsOnBarriers() bool { return !c.Weak }

// recoveryMode is the mode's runtime that recovers tasks on their own,
// nil in the barrier modes.
func (c *JobConfig) recoveryMode() RecoveryMode {
	if c.Weak {
		return c.Recovery
	}
	return nil
}
