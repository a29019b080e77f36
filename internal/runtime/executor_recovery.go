package runtime

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/remote"
	"github.com/weirstream/weir/internal/network/wire"
)

// RecoveryMode is the runtime of a consistency mode that recovers tasks
// on their own, instead of restoring a region from a checkpoint of all
// its tasks (JobConfig.Recovery). WEAKLY_CONSISTENT is one: its
// implementation (internal/runtime/weakrt) imports this package, which
// must not import it back, so the mode reaches the TaskExecutor, the
// tasks and the JobMaster only through the interfaces of this file,
// task_recovery.go and jobmaster_recovery.go, each a narrow view of what
// the mode needs. The barrier modes have none: nil.
type RecoveryMode interface {
	// NewJob makes the TaskExecutor's part of a job prepared on it, once
	// per job and TaskExecutor.
	NewJob(job JobInfo) JobRecovery
	// InitialRestore gathers, at the JobMaster's start, what each task
	// restores (jobmaster.Config.WeakLatest): the mode has no checkpoint
	// of the whole job to restore.
	InitialRestore(ctx context.Context, jm JobMasterView) (TaskRestores, error)
}

// JobInfo is what a RecoveryMode learns of a job prepared on a
// TaskExecutor.
type JobInfo struct {
	// Prepared is the job: its graph, configuration and storage.
	Prepared *PreparedJob
	// Weak are the job's failover figures the mode counts in.
	Weak *jobstatus.WeakStats
	// TaskManager is the TaskExecutor's id; Logger its logger.
	TaskManager deployment.ResourceID
	Logger      *slog.Logger
}

// JobRecovery is the TaskExecutor's part of a job's consistency mode, as
// Recovery (task_recovery.go) is the task's: the barrier modes need
// nothing of it and hold barrierJobRecovery; the mode that recovers one
// task at a time from its producers' in-flight logs keeps those logs
// there, across the attempts of both ends of each channel, and follows
// executions' ends, checkpoint notifications and the figures a report
// carries. Made once per job when it is prepared (RecoveryMode.NewJob).
// Optional parts: PeerFollower, LogServer, TotalsReporter.
type JobRecovery interface {
	// Ended is told of an execution's end before the JobMaster hears of
	// it.
	Ended(exec deployment.ExecutionID, failed bool)
	// Hears reports whether task hears of checkpoint id's completion or
	// abort.
	Hears(id checkpoint.ID, task checkpoint.TaskID) bool
	// AddStats adds the mode's figures of task to its report.
	AddStats(task checkpoint.TaskID, st *jobstatus.TaskStats)
	// NewExecution returns the mode's part of an execution being
	// deployed, which wires its channels and sets up its task; nil
	// leaves the execution as the barrier modes build it.
	NewExecution(x ExecInfo) ExecRecovery
}

// PeerFollower is a JobRecovery that follows what changed at the other
// end of the job's channels (TaskExecutor.WeakPeers): it returns the
// channels it reconnected.
type PeerFollower interface {
	FollowPeers(u deployment.WeakPeersUpdate) (moved int)
}

// LogServer is a JobRecovery that answers the partition requests of
// consumers on other TaskManagers from its own logs (remote.WeakHandler):
// life is the job's context on this TaskExecutor, which a replay lives
// in.
type LogServer interface {
	ServeLog(ctx, life context.Context, key remote.PartitionKey, attempt int, from wire.LogPos) (*remote.OutChannel, error)
}

// TotalsReporter is a JobRecovery that counts the job's failover figures
// on this TaskExecutor (TaskExecutor.WeakTotals).
type TotalsReporter interface {
	Totals() *jobstatus.WeakStats
}

// ExecInfo is one execution being deployed, for its ExecRecovery.
type ExecInfo struct {
	Exec   deployment.ExecutionID
	Vertex *dataflow.Vertex
	// Inputs are its gate channels' producers, in gate order, and
	// InputEdges the index, among each producer's output edges, of the
	// edge behind that channel.
	Inputs     []deployment.ChannelDesc
	InputEdges []int
	// Restore is the checkpoint it restores, nil for none.
	Restore RestoreView
	// Life is the execution's context; Fail fails it from any goroutine.
	Life context.Context
	Fail func(error)
	// Self is this TaskManager; Net its data plane (nil: none).
	Self deployment.ResourceID
	Net  *remote.ConnManager
}

// ExecRecovery is a mode's part of one execution: it replaces how the
// execution's channels are made (every output a log of the mode's, every
// remote input one that follows its producer), connects its local inputs
// and sets up its task's Recovery. The TaskExecutor calls it in this
// order while it builds the deployment: Output and OpenRemoteInput,
// ConnectInputs (consumers), Setup, then Release at the execution's end.
type ExecRecovery interface {
	// Output returns the sender of the channel to consumer subtask j of
	// output edge k.
	Output(k, j int, consumer deployment.ChannelDesc, codec dataflow.ChannelCodec) (network.Sender, error)
	// OpenRemoteInput subscribes gate channel cfg.Channel, whose producer
	// runs on another TaskManager (in); cfg is the barrier modes'
	// request, which the mode adapts. ctx bounds the connect.
	OpenRemoteInput(ctx context.Context, in deployment.ChannelDesc, cfg remote.InputConfig) error
	// ConnectInputs wires the gate channels fed in this TaskManager,
	// after the remote ones were opened.
	ConnectInputs(gate *network.Gate) error
	// Setup prepares the task's Recovery once it is built.
	Setup(ctx context.Context, t TaskView) (Recovery, error)
	// HasRemoteInputs reports whether a gate channel is fed from another
	// TaskManager.
	HasRemoteInputs() bool
	// Release closes what the execution opened at its end and adds its
	// remote bytes to st (nil: not counted).
	Release(st *jobstatus.Recorder)
}

// RestoreView is the checkpoint an execution restores, as a mode reads
// it: its metadata and the files it names.
type RestoreView interface {
	Metadata() *checkpoint.Metadata
	OpenFile(ctx context.Context, f checkpoint.StateFile) (io.ReadCloser, error)
}

// Metadata and OpenFile make a restorePoint a RestoreView.
func (rp *restorePoint) Metadata() *checkpoint.Metadata { return rp.md }

func (rp *restorePoint) OpenFile(ctx context.Context, f checkpoint.StateFile) (io.ReadCloser, error) {
	return rp.fs.OpenFile(ctx, f)
}

// view returns rp as a RestoreView, nil for none.
func (rp *restorePoint) view() RestoreView {
	if rp == nil {
		return nil
	}
	return rp
}

// barrierJobRecovery is JobRecovery in the barrier modes: every task
// hears of every checkpoint, and nothing else is kept.
type barrierJobRecovery struct{}

func (barrierJobRecovery) Ended(deployment.ExecutionID, bool)               {}
func (barrierJobRecovery) Hears(checkpoint.ID, checkpoint.TaskID) bool      { return true }
func (barrierJobRecovery) AddStats(checkpoint.TaskID, *jobstatus.TaskStats) {}
func (barrierJobRecovery) NewExecution(ExecInfo) ExecRecovery               { return nil }

// newJobRecovery returns a prepared job's JobRecovery for its mode.
func (te *TaskExecutor) newJobRecovery(prep *PreparedJob) JobRecovery {
	m := prep.Config.recoveryMode()
	if m == nil {
		return barrierJobRecovery{}
	}
	return m.NewJob(JobInfo{Prepared: prep, Weak: &prep.Config.recorder().Weak, TaskManager: te.cfg.ID, Logger: te.log})
}

// recovery returns the job's JobRecovery. The job must be prepared.
func (j *teJob) recovery() JobRecovery { return j.rec }

// preparedRecovery is recovery for a job that may not be prepared yet
// (or failed to be): barrierJobRecovery until it is.
func (j *teJob) preparedRecovery() JobRecovery {
	select {
	case <-j.ready:
		if j.prep != nil {
			return j.rec
		}
	default:
	}
	return barrierJobRecovery{}
}

// recipients returns the executions of job that hear of checkpoint id.
func (te *TaskExecutor) recipients(job string, id checkpoint.ID) []*execution {
	all := te.lookup(job, nil)
	te.mu.Lock()
	j := te.jobs[job]
	te.mu.Unlock()
	if j == nil {
		return all
	}
	rec := j.preparedRecovery()
	var out []*execution
	for _, e := range all {
		if rec.Hears(id, e.id.Task) {
			out = append(out, e)
		}
	}
	return out
}

// serveRecoveryRequests makes the data plane's registry answer the
// partition requests of restarted consumers on other TaskManagers for a
// channel's in-flight log (recoveryRequest).
func (te *TaskExecutor) serveRecoveryRequests(r *remote.PartitionRegistry) {
	r.SetWeakHandler(te.recoveryRequest)
}

// recoveryRequest answers the partition request of a consumer attempt on
// another TaskManager in WEAKLY_CONSISTENT mode (remote.WeakHandler)
// through the job's LogServer. It waits, within ctx, for the job to be
// prepared on this TaskManager: consumer and producer deployments race.
func (te *TaskExecutor) recoveryRequest(ctx context.Context, key remote.PartitionKey, attempt int, from wire.LogPos) (*remote.OutChannel, error) {
	j, err := te.preparedJob(ctx, key.Job)
	if err != nil {
		return nil, err
	}
	ls, ok := j.recovery().(LogServer)
	if !ok {
		return nil, fmt.Errorf("job %s is not in WEAKLY_CONSISTENT mode on TaskManager %s: the consumer asked for a weak channel", key.Job, te.cfg.ID)
	}
	return ls.ServeLog(ctx, j.ctx, key, attempt, from)
}

// preparedJob returns job, waiting within ctx until this TaskExecutor was
// asked to prepare it and did.
func (te *TaskExecutor) preparedJob(ctx context.Context, job string) (*teJob, error) {
	for {
		te.mu.Lock()
		j := te.jobs[job]
		if te.added == nil {
			te.added = make(chan struct{})
		}
		added := te.added
		te.mu.Unlock()
		if j != nil {
			select {
			case <-j.ready:
				if j.prepErr != nil {
					return nil, j.prepErr
				}
				return j, nil
			case <-ctx.Done():
				return nil, fmt.Errorf("job %s not prepared on TaskManager %s: %w", job, te.cfg.ID, ctx.Err())
			}
		}
		select {
		case <-added:
		case <-ctx.Done():
			return nil, fmt.Errorf("job %s not deployed on TaskManager %s: %w", job, te.cfg.ID, ctx.Err())
		}
	}
}

// WeakPeers applies what changed at the other end of the job's channels
// (WEAKLY_CONSISTENT mode): the logs of channels to finished consumers
// discard from now on, and running consumers reconnect their channels
// from moved producers (PeerFollower). It does nothing for a job not
// prepared here, or not in that mode.
func (te *TaskExecutor) WeakPeers(job string, u deployment.WeakPeersUpdate) {
	te.mu.Lock()
	j := te.jobs[job]
	te.mu.Unlock()
	if j == nil {
		return
	}
	apply := func() {
		pf, ok := j.preparedRecovery().(PeerFollower)
		if !ok {
			return
		}
		if te.cfg.Network != nil {
			// Of two TaskManagers the smaller id dials: one that runs
			// no deployment naming the producer's new one must learn
			// of it here, or the producer's deployment, which waits
			// for a connection from every peer, waits for it.
			for _, m := range u.Moved {
				if m.TM != te.cfg.ID {
					go te.cfg.Network.Conn(j.ctx, string(m.TM), m.DataAddress)
				}
			}
		}
		n := pf.FollowPeers(u)
		if len(u.Moved) > 0 {
			te.log.Info("weak: producers moved; reconnecting their consumers' channels", "job", job, "producers", len(u.Moved), "channels", n)
		}
	}
	select {
	case <-j.ready:
		apply()
	default:
		// Still preparing (the update came right behind PrepareJob): the
		// mode takes it in any order with the deployments, which wait
		// for the job on their own goroutines too.
		go func() {
			select {
			case <-j.ready:
				apply()
			case <-j.ctx.Done():
			}
		}()
	}
}

// WeakTotals returns the failover figures this TaskExecutor counted of a
// WEAKLY_CONSISTENT job (the job's status when all its tasks run here),
// nil for another job or one it does not run.
func (te *TaskExecutor) WeakTotals(job string) *jobstatus.WeakStats {
	te.mu.Lock()
	j := te.jobs[job]
	te.mu.Unlock()
	if j == nil {
		return nil
	}
	if tr, ok := j.preparedRecovery().(TotalsReporter); ok {
		return tr.Totals()
	}
	return nil
}
