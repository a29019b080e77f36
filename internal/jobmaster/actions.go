package jobmaster

import (
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
)

// Action is an output of Machine.Step for the driver to perform in the
// order returned: one of the types below. Storage actions (PersistMetadata,
// RegisterCheckpoint, LoadLatest, CopySavepoint, Retain, Discard,
// SweepShared, ReserveIDs) are
// performed off the driver's loop, in the order given, by one worker that
// feeds each result back as an event; the Machine relies on that order (a
// savepoint is copied before a Retain may remove its checkpoint).
type Action interface{ isAction() }

// PrepareJob makes a TaskManager ready to run the job's tasks.
type PrepareJob struct{ TM TM }

// Deploy starts new executions, one Deployment per group. Slots places
// every logical slot of the deployment (the channels between its tasks
// need their peers' addresses; with Config.Weak, every logical slot of
// the job, since a task restarted alone has channels to peers that keep
// running); Restore is nil for a fresh start. Attempt is the attempt
// restore timing follows.
type Deploy struct {
	Groups  []Group
	Slots   map[int]Slot
	Restore *RestorePoint
	Attempt int
}

// CancelExecs stops executions; each answers with a terminal state.
type CancelExecs struct{ Groups []Group }

// TriggerCheckpoint sends checkpoint ID's barrier to the source
// executions in Groups (none while the job drains: the status still
// records the trigger). With Config.Weak it goes to exactly one
// execution, source or not, which snapshots on its own without a
// barrier: ID is that task's snapshot.
type TriggerCheckpoint struct {
	ID        checkpoint.ID
	Timestamp time.Time
	Kind      checkpoint.Kind
	Groups    []Group
}

// StopSources makes source executions end their input now.
type StopSources struct{ Groups []Group }

// NotifyComplete reports a completed checkpoint. TMs are told unless Held:
// a final checkpoint that completed while a region restarts is not told
// (see doc.go); the next final checkpoint's notification covers it.
//
// With Config.Weak the checkpoint is one task's snapshot and Groups holds
// that task's execution (none if it stopped meanwhile; TMs is then empty
// too): only it may be told. Snapshot ids are not cumulative across tasks
// (another task's id 7 says nothing about this task's 5), so the
// notification must not reach the other executions on its TaskManager.
type NotifyComplete struct {
	ID     checkpoint.ID
	Kind   checkpoint.Kind
	TMs    []TM
	Held   bool
	Groups []Group
}

// NotifyAborted tells TMs that checkpoint ID was abandoned.
type NotifyAborted struct {
	ID       checkpoint.ID
	Kind     checkpoint.Kind
	Reason   string
	Subsumed bool
	// Cause classifies the abort (declined, timeout, storage,
	// task-failure, subsumed).
	Cause coordinator.Cause
	TMs   []TM
	// Groups, with Config.Weak, is the one execution whose snapshot
	// failed (see NotifyComplete).
	Groups []Group
}

// ProbeStorage tests checkpoint storage with a small write and feeds
// StorageProbed (a storage action: the coordinator asks for one each
// interval while storage fails).
type ProbeStorage struct{}

// StorageAlert reports that checkpoint storage is failing (the first
// failure, then at most every 30 s): the driver logs it naming the
// storage, its free space, and the fields below, and sets the
// checkpointStorageFailing metric.
type StorageAlert struct{ coordinator.StorageAlert }

// StorageRecovered reports that a checkpoint completed after storage
// failures.
type StorageRecovered struct{ coordinator.StorageRecovered }

// PersistMetadata writes checkpoint ID's metadata and feeds StoreDone.
type PersistMetadata struct {
	ID        checkpoint.ID
	Kind      checkpoint.Kind
	Timestamp time.Time
	States    []checkpoint.TaskState
}

// RegisterCheckpoint registers the pointer to checkpoint ID's metadata,
// written by its PersistMetadata (Config.Register: under high availability,
// in a transaction fenced on the leader's term), and feeds Registered. It
// is a storage action: the worker performs it after the PersistMetadata.
type RegisterCheckpoint struct {
	ID   checkpoint.ID
	Kind checkpoint.Kind
}

// LoadLatest finds the newest retained checkpoint that verifies (with
// Config.Register: the newest registered one) and feeds LatestLoaded.
type LoadLatest struct{}

// CopySavepoint copies completed checkpoint ID under Target and feeds
// SavepointCopied.
type CopySavepoint struct {
	Req    RequestID
	ID     checkpoint.ID
	Target string
}

// Retain registers completed checkpoint ID's shared files, applies
// retention and deletes the shared files only removed checkpoints used;
// with Sweep (nothing in flight) it also deletes unreferenced ones and
// feeds Swept: no barrier goes out until then.
type Retain struct {
	ID    checkpoint.ID
	Sweep bool
}

// Discard removes the folders of checkpoints that will never complete.
// Aborted marks one the coordinator aborted: its shared uploads are
// forgotten, deleted by the next sweep (now, with Sweep, which feeds
// Swept as Retain's does).
type Discard struct {
	IDs     []checkpoint.ID
	Aborted bool
	Sweep   bool
}

// SweepShared deletes shared files no checkpoint references; nothing is
// in flight.
type SweepShared struct{}

// ReserveIDs persists a bound below which this run's checkpoint ids stay
// and feeds IDsReserved; barriers of ids at or above the old bound wait
// for it (design: checkpoint-ids).
type ReserveIDs struct{ UpTo checkpoint.ID }

// Answer replies to request Req.
type Answer struct {
	Req  RequestID
	ID   checkpoint.ID
	Path string
	Err  error
}

// Failure records the job's newest failure for its status.
type Failure struct{ Cause string }

// ReleaseJob tells TMs to forget the job: it ended.
type ReleaseJob struct{ TMs []TM }

// WeakPeers tells TMs, with Config.Weak, what changed at the other end of
// their tasks' channels, so that no task restarts for a peer it outlives:
//
//   - Moved: producers restarted on another TaskManager than their
//     previous attempt's (theirs was lost). A consumer there that runs on
//     reconnects each channel from that producer to the new attempt, at
//     the position it read to, instead of restarting.
//   - Finished: consumers that finished, having read every channel to its
//     end. A producer's output log for such a consumer discards what the
//     producer sends: a producer restarted from a snapshot re-emits what
//     the consumer read already, and no consumer attempt will ever ask
//     for it, so a rebuilt log would wait for its position forever.
//
// A restart's Finished goes to the deployment's TMs before its Deploy,
// its Moved to every TM of the job after it.
type WeakPeers struct {
	TMs      []TM
	Moved    []MovedProducer
	Finished []checkpoint.TaskID
}

// MovedProducer is a producer's new execution and where it runs.
type MovedProducer struct {
	Exec ExecutionID
	Slot Slot
}

// JobEnded is the last action but the stop requests' answers: the job's
// outcome, State JobFinished, JobFailed or JobCanceled, and for the last
// two the error the run returns (a *JobFailedError when the restart
// strategy gave up).
type JobEnded struct {
	State JobState
	Err   error
}

func (PrepareJob) isAction()         {}
func (Deploy) isAction()             {}
func (CancelExecs) isAction()        {}
func (TriggerCheckpoint) isAction()  {}
func (StopSources) isAction()        {}
func (NotifyComplete) isAction()     {}
func (NotifyAborted) isAction()      {}
func (ProbeStorage) isAction()       {}
func (StorageAlert) isAction()       {}
func (StorageRecovered) isAction()   {}
func (PersistMetadata) isAction()    {}
func (RegisterCheckpoint) isAction() {}
func (LoadLatest) isAction()         {}
func (CopySavepoint) isAction()      {}
func (Retain) isAction()             {}
func (Discard) isAction()            {}
func (SweepShared) isAction()        {}
func (ReserveIDs) isAction()         {}
func (Answer) isAction()             {}
func (Failure) isAction()            {}
func (ReleaseJob) isAction()         {}
func (WeakPeers) isAction()          {}
func (JobEnded) isAction()           {}
