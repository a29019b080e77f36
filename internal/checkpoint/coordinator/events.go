package coordinator

import (
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Event is an input to Coordinator.Step. The driver creates events from
// timers, RPCs from tasks, and the results of actions it performed.
type Event interface{ isEvent() }

// Tick tells the coordinator the time. The driver sends one at NextDeadline
// (or later); it fires periodic triggers and times out pending checkpoints.
type Tick struct{ Now time.Time }

// TriggerRequest asks for a checkpoint now (a user's on-demand checkpoint).
// It ignores the interval and min pause but respects MaxConcurrent; if no
// checkpoint can start, Step returns a Rejected action. Kind Savepoint
// makes the checkpoint one whose state must be canonical (tasks take full
// snapshots, never incremental ones); any other kind is Periodic.
type TriggerRequest struct {
	Now  time.Time
	Kind checkpoint.Kind
}

// EndOfInput reports that every source reached the end of its input. The
// coordinator triggers a Final checkpoint at once, whatever the interval, min
// pause and concurrency, and triggers no periodic checkpoint afterwards
// (until a Reset).
type EndOfInput struct{ Now time.Time }

// Ack is a task's acknowledgement of checkpoint ID with its state handles.
type Ack struct {
	Task  checkpoint.TaskID
	ID    checkpoint.ID
	State checkpoint.TaskState
}

// Decline is a task's refusal to take checkpoint ID; it fails the checkpoint.
// Cause is CauseStorage when the task could not write its snapshot to
// checkpoint storage, else CauseDeclined.
type Decline struct {
	Task   checkpoint.TaskID
	ID     checkpoint.ID
	Reason string
	Cause  Cause
}

// Persisted is the result of a Persist action: Err is nil once the metadata
// is durably written. Now is when the write finished.
type Persisted struct {
	ID  checkpoint.ID
	Err error
	Now time.Time
	// Registration: the metadata was written but its registration was
	// refused (high availability); the failure is CauseRegistration, not
	// storage's.
	Registration bool
}

// Reset reports a job failover: every pending checkpoint that is not being
// persisted is aborted. Checkpoint ids continue after the highest triggered.
type Reset struct{ Reason string }

// Suspend stops checkpointing while part of the job restarts (a region
// failover): every pending checkpoint that is not being persisted is
// aborted, as by Reset; no periodic checkpoint is triggered and a
// TriggerRequest is rejected with Reason until Resume. An EndOfInput seen
// meanwhile takes its final checkpoint at Resume. Suspending again only
// replaces the reason.
type Suspend struct{ Reason string }

// Resume restarts checkpointing after Suspend: the next periodic
// checkpoint is due one interval after Now, giving the restarted tasks time
// to come up. Without a Suspend before it, it only tells the time.
type Resume struct{ Now time.Time }

// StorageProbed is the result of a ProbeStorage action: Err is nil when
// the probe wrote to checkpoint storage. Now is when it finished.
type StorageProbed struct {
	Err error
	Now time.Time
}

func (Tick) isEvent()           {}
func (TriggerRequest) isEvent() {}
func (EndOfInput) isEvent()     {}
func (Ack) isEvent()            {}
func (Decline) isEvent()        {}
func (Persisted) isEvent()      {}
func (Reset) isEvent()          {}
func (Suspend) isEvent()        {}
func (Resume) isEvent()         {}
func (StorageProbed) isEvent()  {}

// Action is an output of Coordinator.Step for the driver to perform, in the
// order returned.
type Action interface{ isAction() }

// Trigger asks the driver to send a trigger for checkpoint ID to every source
// task.
type Trigger struct {
	ID        checkpoint.ID
	Timestamp time.Time
	Kind      checkpoint.Kind
}

// Persist asks the driver to write the metadata of checkpoint ID, which every
// task acknowledged, and then to feed a Persisted event. States are in the
// order of the tasks given to New.
type Persist struct {
	ID        checkpoint.ID
	Kind      checkpoint.Kind
	Timestamp time.Time
	States    []checkpoint.TaskState
}

// NotifyComplete asks the driver to tell every task that checkpoint ID
// completed, so two-phase-commit sinks commit what it covers.
type NotifyComplete struct {
	ID   checkpoint.ID
	Kind checkpoint.Kind
}

// Abort asks the driver to tell every task that checkpoint ID was abandoned
// and to discard its files. Subsumed is true when a newer checkpoint
// completed first; that is not a failure.
type Abort struct {
	ID       checkpoint.ID
	Kind     checkpoint.Kind
	Reason   string
	Subsumed bool
	// Cause classifies the abort (CauseSubsumed with Subsumed).
	Cause Cause
}

// Failover asks the driver to restart the job: more consecutive checkpoints
// failed than tolerated, or a Final checkpoint failed. The coordinator has
// already aborted its other pending checkpoints, as a Reset would; the driver
// need not feed a Reset for this failover (one more is harmless).
type Failover struct{ Reason string }

// Rejected answers a TriggerRequest that could not start a checkpoint.
type Rejected struct{ Reason string }

// ProbeStorage asks the driver to test checkpoint storage with a small
// write, and to feed StorageProbed. The coordinator asks for one each
// interval while storage is failing, so a recovery is seen within one
// interval even while checkpoints back off.
type ProbeStorage struct{}

// StorageAlert asks the driver to alert (log, metrics) that checkpoint
// storage is failing: the first storage failure, then at most once per
// Config.AlertEvery. Failures counts the storage failures since Since,
// Recent those since the previous alert; NextRetry is the current backoff
// and GiveUpIn how long until the job fails for it (0: never).
type StorageAlert struct {
	Reason    string
	Since     time.Time
	Failures  int
	Recent    int
	NextRetry time.Duration
	GiveUpIn  time.Duration
}

// StorageRecovered reports that a checkpoint completed after storage
// failures: Failures of them over Duration.
type StorageRecovered struct {
	Failures int
	Duration time.Duration
}

// FailJob asks the driver to fail the job for good (no restart can help):
// checkpoint storage failed for longer than the configured bound, or a
// two-phase-commit sink's open transaction would outlive its timeout
// before a checkpoint could commit it.
type FailJob struct{ Reason string }

func (Trigger) isAction()          {}
func (Persist) isAction()          {}
func (NotifyComplete) isAction()   {}
func (Abort) isAction()            {}
func (Failover) isAction()         {}
func (Rejected) isAction()         {}
func (ProbeStorage) isAction()     {}
func (StorageAlert) isAction()     {}
func (StorageRecovered) isAction() {}
func (FailJob) isAction()          {}
