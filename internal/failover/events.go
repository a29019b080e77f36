package failover

import (
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Event is an input of the Handler: one of the types below.
type Event interface{ isEvent() }

// TaskFailed reports that a task of the current attempt failed. The task is
// terminal. Unrecoverable errors fail the job without asking the strategy.
type TaskFailed struct {
	Task          checkpoint.TaskID
	Err           error
	Unrecoverable bool
	Now           time.Time
}

// TaskManagerLost reports that the tasks of a lost TaskManager are gone:
// each counts as terminal and fails its region.
type TaskManagerLost struct {
	Tasks  []checkpoint.TaskID
	Reason string
	Now    time.Time
}

// GlobalFailure restarts every region once, e.g. the checkpoint
// coordinator's failover after too many failed checkpoints.
type GlobalFailure struct {
	Reason string
	Now    time.Time
}

// TaskTerminal reports that a cancelled task has stopped.
type TaskTerminal struct{ Task checkpoint.TaskID }

// TaskRunning reports that a redeployed task is running.
type TaskRunning struct{ Task checkpoint.TaskID }

// Tick advances the handler's clock; restarts whose delay passed are due.
type Tick struct{ Now time.Time }

func (TaskFailed) isEvent()      {}
func (TaskManagerLost) isEvent() {}
func (GlobalFailure) isEvent()   {}
func (TaskTerminal) isEvent()    {}
func (TaskRunning) isEvent()     {}
func (Tick) isEvent()            {}

// Action is an output of the Handler, for the JobMaster to perform in
// order: one of the types below.
type Action interface{ isAction() }

// Cancel asks to cancel these tasks; each is answered with TaskTerminal.
type Cancel struct{ Tasks []checkpoint.TaskID }

// SuspendCheckpointing stops triggering checkpoints while a region fails.
type SuspendCheckpointing struct{ Reason string }

// ResumeCheckpointing restarts triggering once every task runs again.
type ResumeCheckpointing struct{}

// Restart redeploys these regions (indices into Regions) from the newest
// completed checkpoint; their tasks answer with TaskRunning.
type Restart struct{ Regions []int }

// FailJob ends the job as failed. The handler ignores every later event.
type FailJob struct{ Cause error }

// ArmTimer asks for a Tick at or after At.
type ArmTimer struct{ At time.Time }

func (Cancel) isAction()               {}
func (SuspendCheckpointing) isAction() {}
func (ResumeCheckpointing) isAction()  {}
func (Restart) isAction()              {}
func (FailJob) isAction()              {}
func (ArmTimer) isAction()             {}
