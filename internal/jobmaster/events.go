package jobmaster

import (
	"github.com/weirstream/weir/internal/checkpoint"
)

// Event is an input of Machine.Step: one of the types below. Reports of
// executions come from TaskManagers; the *Done, *Loaded, *Copied and
// *Reserved events are the results of actions the driver performed.
type Event interface{ isEvent() }

// Start begins the job: the Machine prepares the TaskManagers it was
// given and, if there are none (cluster mode prepares each before its
// first deployment), deploys at once.
type Start struct{}

// Prepared answers PrepareJob. The first successful answer deploys the
// job; an error fails it.
type Prepared struct{ Err error }

// StateChanged reports an execution's new state: RUNNING, then one
// terminal state; FAILED carries Err, Unrecoverable when no restart can
// cure it.
type StateChanged struct {
	Exec          ExecutionID
	State         ExecState
	Err           error
	Unrecoverable bool
}

// Ack is an execution's acknowledgement of checkpoint ID.
type Ack struct {
	Exec  ExecutionID
	ID    checkpoint.ID
	State checkpoint.TaskState
}

// Decline is an execution's refusal of checkpoint ID.
type Decline struct {
	Exec   ExecutionID
	ID     checkpoint.ID
	Reason string
	// Storage: the task could not write its snapshot to checkpoint
	// storage (its error classified by storage.IsStorageFailure).
	Storage bool
}

// StorageProbed is the result of ProbeStorage.
type StorageProbed struct{ Err error }

// EndOfData reports that an execution consumed all its input.
type EndOfData struct{ Exec ExecutionID }

// StoreDone is the result of PersistMetadata: Err is nil once the
// metadata of checkpoint ID is durable.
type StoreDone struct {
	ID  checkpoint.ID
	Err error
}

// Registered is the result of RegisterCheckpoint: Err is nil once the
// pointer to checkpoint ID's metadata is registered (Config.Register); only
// then is the checkpoint complete. An error fails the checkpoint.
type Registered struct {
	ID  checkpoint.ID
	Err error
}

// LatestLoaded is the result of LoadLatest: the newest retained
// checkpoint that verifies (nil: none), or the error that prevented
// looking.
type LatestLoaded struct {
	Restore *RestorePoint
	Err     error
}

// SavepointCopied is the result of CopySavepoint.
type SavepointCopied struct {
	Req  RequestID
	ID   checkpoint.ID
	Path string
	Err  error
}

// IDsReserved is the result of ReserveIDs.
type IDsReserved struct {
	UpTo checkpoint.ID
	Err  error
}

// Swept is the result of a Retain or Discard with Sweep: the sweep of
// unreferenced shared files ran. Barriers wait for it: a checkpoint
// triggered meanwhile uploads shared files no checkpoint references yet,
// which the sweep would delete.
type Swept struct{}

// SlotsOffered says slots were offered: a deployment waiting for slots
// tries again.
type SlotsOffered struct{}

// TaskManagerLost says a TaskManager session is gone with every
// execution the job ran there. Cause is the failure to report.
type TaskManagerLost struct {
	TM    TM
	Cause string
}

// Tick tells the Machine the time has come for its next deadline
// (NextDeadline); every Step is given the time, this event only wakes it.
type Tick struct{}

// Request is an outside request, answered by an Answer with the same Req.
// A stop's Target was checked writable by the driver.
type Request struct {
	Req    RequestID
	Kind   RequestKind
	Target string
}

// Cancel ends the job: Err (the context's error) is its outcome.
type Cancel struct{ Err error }

func (Start) isEvent()           {}
func (Prepared) isEvent()        {}
func (StateChanged) isEvent()    {}
func (Ack) isEvent()             {}
func (Decline) isEvent()         {}
func (EndOfData) isEvent()       {}
func (StoreDone) isEvent()       {}
func (StorageProbed) isEvent()   {}
func (Registered) isEvent()      {}
func (LatestLoaded) isEvent()    {}
func (SavepointCopied) isEvent() {}
func (IDsReserved) isEvent()     {}
func (Swept) isEvent()           {}
func (SlotsOffered) isEvent()    {}
func (TaskManagerLost) isEvent() {}
func (Tick) isEvent()            {}
func (Request) isEvent()         {}
func (Cancel) isEvent()          {}
