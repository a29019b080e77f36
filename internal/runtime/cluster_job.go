package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobmaster"
	"github.com/weirstream/weir/internal/jobstatus"
)

// ClusterJobConfig is what a job needs beyond its JobConfig to run in a
// JobManager.
type ClusterJobConfig struct {
	// Spec is the job's spec; TaskManagers build the graph from it.
	Spec deployment.JobSpec
	// Slots places the job's logical slots.
	Slots deployment.Slots
	// SlotRequestTimeout is how long a region waits for slots before the
	// job fails (slot.request.timeout, 5m).
	SlotRequestTimeout time.Duration
	// Reports returns the job's running tasks' counters, as the
	// TaskManagers' heartbeats carried them.
	Reports func() []jobstatus.TaskStats
	// ReservedCheckpoints is the bound a previous run of the job reserved
	// its checkpoint ids below (0: none): this run's ids start there, so
	// no id of a checkpoint that run triggered and never completed is used
	// again.
	ReservedCheckpoints checkpoint.ID
	// ReserveCheckpoints persists a new bound before an id at or above the
	// current one is triggered (nil: no reservation). It is called on the
	// JobMaster's goroutine, at checkpoint rate / reservationStep.
	ReserveCheckpoints func(upTo checkpoint.ID) error
	// FirstAttempt is the attempt number of the run's first executions:
	// runs of one job number their attempts apart, so a leftover task of
	// an earlier run is never taken for one of this run.
	FirstAttempt int
	// Registry, under high availability, registers the job's completed
	// checkpoints (etcd, fenced on the leader's term): a checkpoint is
	// complete, told to the TaskManagers and restorable only once
	// registered, and the job restores the newest registered checkpoint
	// that verifies, never a newer metadata nobody registered. nil: a
	// written metadata completes a checkpoint (no HA).
	Registry CheckpointRegistry
	// CrashPoint, if set, is called at the named crash points of
	// checkpoint completion (CrashAfterMetadata, CrashAfterRegister,
	// CrashMidNotify) for fault-injection tests; it may kill the process.
	CrashPoint func(name string)
	// ResumeFrom, for a job a previous JobManager ran, is the first
	// checkpoint that run took: if storage holds a completed checkpoint at
	// least this new, the job restores the newest one instead of its --from
	// point (which would replay what the sinks committed since).
	ResumeFrom checkpoint.ID
}

// ClusterJob is one job in a JobManager: a JobMaster whose tasks run on
// TaskManagers it reaches through the gateways its Slots hand out.
type ClusterJob struct {
	jm    *JobMaster
	gw    deployment.JobMasterGateway
	slots deployment.Slots
}

// DefaultSlotRequestTimeout is slot.request.timeout's default.
const DefaultSlotRequestTimeout = 5 * time.Minute

// NewClusterJob prepares a job for a JobManager: it builds the job graph,
// opens checkpoint storage and finds the restore point (--from, else the
// newest retained checkpoint), refusing one the graph cannot use. Run
// starts it.
func NewClusterJob(ctx context.Context, g *dataflow.Graph, cfg JobConfig, cc ClusterJobConfig) (*ClusterJob, error) {
	if cc.Slots == nil {
		return nil, errors.New("cluster job: no slot provider")
	}
	if cc.SlotRequestTimeout <= 0 {
		cc.SlotRequestTimeout = DefaultSlotRequestTimeout
	}
	cfg.resumeFrom = cc.ResumeFrom
	cfg.reservedIDs = cc.ReservedCheckpoints
	cfg.registry = cc.Registry
	cfg.crashPoint = cc.CrashPoint
	jm, _, err := newJob(ctx, g, &cfg)
	if err != nil {
		return nil, err
	}
	if err := checkEdgeCodecs(jm.jg, cfg.BatchSize); err != nil {
		return nil, err
	}
	jm.firstAttempt = cc.FirstAttempt
	jm.reserveIDs, jm.reserved = cc.ReserveCheckpoints, cc.ReservedCheckpoints
	jm.spec = cc.Spec
	jm.spec.Name = cfg.JobName
	jm.spec.Fingerprint = Fingerprint(jm.jg)
	jm.place = &slotPlacement{slots: cc.Slots}
	jm.slotTimeout = cc.SlotRequestTimeout
	if cc.Reports != nil {
		cfg.recorder().SetTaskSource(cc.Reports)
	}
	jg := jm.jg
	jm.rescaleGraph = func(r jobstatus.Rescale) (*dataflow.Graph, map[string]int, error) {
		return rescaledGraph(g, jg, r, cfg.MaxParallelism)
	}
	return &ClusterJob{jm: jm, gw: &localJobMaster{job: cfg.JobName, in: jm.in}, slots: cc.Slots}, nil
}

// NewestCheckpoint returns the newest completed checkpoint in the job's
// storage (cfg.CheckpointDir, cfg.JobName); 0 when there is none.
func NewestCheckpoint(cfg JobConfig) (checkpoint.ID, error) {
	var sopts []storage.Option
	if cfg.StorageFS != nil {
		sopts = append(sopts, storage.WithFS(cfg.StorageFS))
	}
	store, err := storage.Open(cfg.CheckpointDir, cfg.JobName, sopts...)
	if err != nil {
		return 0, err
	}
	ids, err := store.Completed()
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[len(ids)-1], nil
}

// VertexNames returns each vertex's name by vertex id.
func (j *ClusterJob) VertexNames() map[int]string {
	out := map[int]string{}
	for _, v := range j.jm.jg.Vertices {
		out[v.ID] = v.Name()
	}
	return out
}

// Spec returns the job's spec with the fingerprint of the graph built here.
func (j *ClusterJob) Spec() deployment.JobSpec { return j.jm.spec }

// FirstCheckpoint is the first checkpoint id this run takes: a restarted
// JobManager restores a checkpoint at least this new rather than the
// job's --from point.
func (j *ClusterJob) FirstCheckpoint() int64 { return int64(j.jm.firstOwn) }

// Gateway is where the TaskManagers' reports for this job go. It never
// blocks.
func (j *ClusterJob) Gateway() deployment.JobMasterGateway { return j.gw }

// SlotsChanged tells the job that slots were offered: a region waiting for
// slots tries again.
func (j *ClusterJob) SlotsChanged() { j.jm.in.put(jmEvent{ev: jobmaster.SlotsOffered{}}) }

// TaskManagerLost tells the job that a TaskManager session is gone: every
// execution the job deployed through tm (the gateway Slots handed out for
// that session) failed, and its region restarts on other slots. A gateway
// names a session, not a process: a TaskManager that registers again gets
// a new one, and what the job deploys on the new session is not touched
// by the old session's loss, however late it is reported.
func (j *ClusterJob) TaskManagerLost(tm deployment.TaskManagerGateway, reason string) {
	j.jm.in.put(jmEvent{lost: tm, reason: reason})
}

// Rescaled returns, after Run returned nil because the job stopped to be
// rescaled in place (jobstatus.Rescaler), the parallelism of every
// operator by uid at the new scale: the JobManager records it in the
// job's spec (JobSpec.Parallelism) and starts the job again from its
// newest checkpoint, the final one. nil otherwise.
func (j *ClusterJob) Rescaled() map[string]int {
	if !j.jm.rescaleDone {
		return nil
	}
	out := map[string]int{}
	for _, n := range j.jm.rescaled.graph.Nodes {
		out[n.UID] = n.Parallelism
	}
	return out
}

// RescaleStart returns, with Rescaled, the rescale the next run carries
// out (JobConfig.Rescaling), for it to report the pause; nil otherwise.
func (j *ClusterJob) RescaleStart() *RescaleStart {
	if !j.jm.rescaleDone {
		return nil
	}
	return j.jm.rescaleStart()
}

// Run runs the job until it finishes, fails for good or ctx ends (a
// cancel), and releases its slots.
func (j *ClusterJob) Run(ctx context.Context) error {
	defer j.slots.Release()
	return j.jm.run(ctx)
}

// PrepareJob is the TaskManager's half of application mode: from the graph
// and configuration this process built for spec, it builds the job graph,
// checks it against the JobManager's description and opens checkpoint
// storage, which must be the same folder (or bucket) the JobManager uses.
func PrepareJob(spec deployment.JobSpec, description string, g *dataflow.Graph, cfg JobConfig) (*PreparedJob, error) {
	cfg.JobName = spec.Name
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	jg, err := dataflow.BuildJobGraph(g, cfg.MaxParallelism)
	if err != nil {
		return nil, err
	}
	if err := GraphMismatch(spec.Name, description, Describe(jg)); err != nil {
		return nil, err
	}
	var sopts []storage.Option
	if cfg.StorageFS != nil {
		sopts = append(sopts, storage.WithFS(cfg.StorageFS))
	}
	store, err := storage.Open(cfg.CheckpointDir, cfg.JobName, sopts...)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint storage %s: %w (every TaskManager must reach the JobManager's state.checkpoints.dir: mount the same folder or use s3://)", cfg.CheckpointDir, err)
	}
	return &PreparedJob{Graph: jg, Config: cfg, Store: store}, nil
}
