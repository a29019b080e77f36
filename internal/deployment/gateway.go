package deployment

import (
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/jobmaster"
)

// ExecutionID names one execution attempt of a subtask (see
// jobmaster.ExecutionID, where the type lives: the Machine's rules need it).
type ExecutionID = jobmaster.ExecutionID

// ResourceID names a TaskManager process, e.g. "tm-3f9c1a"; local mode's
// one TaskExecutor is "local".
type ResourceID string

// ExecState is the state of an execution, with Flink's names.
type ExecState = jobmaster.ExecState

// The states of an execution; the last three are terminal.
const (
	ExecDeploying = jobmaster.ExecDeploying
	ExecRunning   = jobmaster.ExecRunning
	ExecFinished  = jobmaster.ExecFinished
	ExecCanceled  = jobmaster.ExecCanceled
	ExecFailed    = jobmaster.ExecFailed
)

// TaskManagerGateway is how a JobMaster reaches one TaskManager: direct
// calls to the TaskExecutor in local mode, the control-plane stream in
// cluster mode. No method blocks for long: each queues its message, and
// the answers come back through the JobMasterGateway.
type TaskManagerGateway interface {
	// ID names the TaskManager.
	ID() ResourceID
	// PrepareJob makes the TaskManager ready to run tasks of a job: it
	// builds (or, locally, finds) the job graph and opens checkpoint
	// storage, then answers JobPrepared. description is runtime.Describe
	// of the JobMaster's graph, for a TaskManager to prove it built the
	// same one.
	PrepareJob(spec JobSpec, description string)
	// ReleaseJob cancels whatever still runs of the job and forgets it.
	ReleaseJob(job string)
	// Deploy starts the executions of one region on this TaskManager; each
	// answers with TaskStateChanged RUNNING and later a terminal state.
	Deploy(d Deployment)
	// Cancel stops executions; each answers with a terminal state.
	Cancel(job string, execs []ExecutionID)
	// Trigger starts checkpoint b at a source execution.
	Trigger(job string, exec ExecutionID, b checkpoint.Barrier)
	// NotifyComplete and NotifyAborted go to every execution of the job
	// on the TaskManager. NotifyComplete says the checkpoint's kind: only
	// a final checkpoint's completion finishes a task.
	NotifyComplete(job string, id checkpoint.ID, kind checkpoint.Kind)
	NotifyAborted(job string, id checkpoint.ID)
	// StopSources makes source executions end their input now (stop with
	// savepoint).
	StopSources(job string, execs []ExecutionID)
	// WeakPeers tells the TaskManager, in WEAKLY_CONSISTENT mode, about
	// the other ends of its tasks' channels (jobmaster.WeakPeers):
	// producers that moved to another TaskManager, consumers that
	// finished.
	WeakPeers(job string, u WeakPeersUpdate)
}

// WeakPeersUpdate is jobmaster.WeakPeers for one TaskManager: Moved names
// each producer's new execution and where it runs now (ChannelDesc.Peer,
// TM, DataAddress); Finished the consumer tasks that finished.
type WeakPeersUpdate struct {
	Moved    []ChannelDesc
	Finished []checkpoint.TaskID
}

// JobMasterGateway is how a TaskManager's tasks reach the JobMaster of
// their job: a queue into the JobMaster's loop in local mode, the
// control-plane stream in cluster mode. No method blocks.
type JobMasterGateway interface {
	// JobPrepared answers PrepareJob; err says why the job cannot run
	// here.
	JobPrepared(job string, err error)
	// TaskStateChanged reports RUNNING and then one terminal state:
	// FINISHED, CANCELED or FAILED with err (which may be marked
	// runtime.Unrecoverable).
	TaskStateChanged(job string, exec ExecutionID, st ExecState, err error)
	Acknowledge(job string, exec ExecutionID, id checkpoint.ID, st checkpoint.TaskState)
	Decline(job string, exec ExecutionID, id checkpoint.ID, reason string, storage bool)
	// EndOfData reports that the execution consumed all its input and
	// flushed its output.
	EndOfData(job string, exec ExecutionID)
}

// DataAddresser is a TaskManagerGateway that knows where its TaskManager's
// data plane listens (a TaskExecutor does; a cluster session learns it at
// registration).
type DataAddresser interface {
	DataAddress() string
}
