package weak

import (
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
)

// Event is an input of Snapshots.Step: one of the types below.
type Event interface{ isEvent() }

// Running reports that task's current execution runs: its snapshots may be
// triggered.
type Running struct {
	Task checkpoint.TaskID
	Now  time.Time
}

// Down reports that task's execution stopped and will be restarted
// (failed, lost with its TaskManager, cancelled). Its snapshot in flight is
// aborted unless its metadata is being written.
type Down struct {
	Task   checkpoint.TaskID
	Reason string
	Now    time.Time
}

// Finished reports that task's execution finished: it takes no snapshot
// any more.
type Finished struct{ Task checkpoint.TaskID }

// EndOfData reports that task consumed all its input: its final snapshot
// is due.
type EndOfData struct {
	Task checkpoint.TaskID
	Now  time.Time
}

// Ack is task's snapshot ID with its state.
type Ack struct {
	Task  checkpoint.TaskID
	ID    checkpoint.ID
	State checkpoint.TaskState
	Now   time.Time
}

// Decline is task's refusal of snapshot ID. Storage: its snapshot write
// failed.
type Decline struct {
	Task    checkpoint.TaskID
	ID      checkpoint.ID
	Reason  string
	Storage bool
	Now     time.Time
}

// Persisted is the result of Persist: Err is nil once snapshot ID's
// metadata is durable (and, under high availability, registered).
// Registration: Err is the refused registration, not the write.
type Persisted struct {
	ID           checkpoint.ID
	Err          error
	Registration bool
	Now          time.Time
}

// Tick triggers the snapshots due and times out those overdue.
type Tick struct{ Now time.Time }

// Request triggers a snapshot of every running task now; a task with one
// in flight takes its next the moment that one ends.
type Request struct{ Now time.Time }

func (Running) isEvent()   {}
func (Down) isEvent()      {}
func (Finished) isEvent()  {}
func (EndOfData) isEvent() {}
func (Ack) isEvent()       {}
func (Decline) isEvent()   {}
func (Persisted) isEvent() {}
func (Tick) isEvent()      {}
func (Request) isEvent()   {}

// Action is an output of Snapshots.Step, to perform in order: one of the
// types below.
type Action interface{ isAction() }

// Trigger asks Task to snapshot now, without a barrier.
type Trigger struct {
	Task      checkpoint.TaskID
	ID        checkpoint.ID
	Kind      checkpoint.Kind
	Timestamp time.Time
}

// Persist writes the metadata of Task's snapshot ID, holding its State
// only, and feeds Persisted.
type Persist struct {
	Task      checkpoint.TaskID
	ID        checkpoint.ID
	Kind      checkpoint.Kind
	Timestamp time.Time
	State     checkpoint.TaskState
}

// Complete reports that Task's snapshot ID completed: it is the task's
// restore point. Discard, if not 0, is the task's previous completed
// snapshot, no longer needed.
type Complete struct {
	Task    checkpoint.TaskID
	ID      checkpoint.ID
	Kind    checkpoint.Kind
	Discard checkpoint.ID
}

// Abort reports that Task's snapshot ID failed; only that task's. Its
// files are to be removed; the task keeps its previous restore point.
type Abort struct {
	Task   checkpoint.TaskID
	ID     checkpoint.ID
	Kind   checkpoint.Kind
	Reason string
	Cause  coordinator.Cause
}

func (Trigger) isAction()  {}
func (Persist) isAction()  {}
func (Complete) isAction() {}
func (Abort) isAction()    {}
