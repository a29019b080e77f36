package jobmaster

import (
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
)

// ExecutionID names one execution attempt of a subtask. A restarted
// region's tasks get the next attempt; the Machine drops every report of
// an attempt that is not its task's current one, so a late ack or failure
// of a cancelled execution never reaches the coordinator or the failover
// handler.
type ExecutionID struct {
	Task    checkpoint.TaskID
	Attempt int
}

func (e ExecutionID) String() string {
	return fmt.Sprintf("%d/%d#%d", e.Task.Vertex, e.Task.Subtask, e.Attempt)
}

// ExecState is the state of an execution, with Flink's names.
type ExecState uint8

// The states of an execution; the last three are terminal.
const (
	ExecDeploying ExecState = iota
	ExecRunning
	ExecFinished
	ExecCanceled
	ExecFailed
)

func (s ExecState) String() string {
	return [...]string{"DEPLOYING", "RUNNING", "FINISHED", "CANCELED", "FAILED"}[s]
}

// Terminal reports whether an execution in state s has stopped for good.
func (s ExecState) Terminal() bool { return s >= ExecFinished }

// JobState is the state of a job as its status shows it.
type JobState uint8

// The states of a job. The Machine reports the first three; the last
// three come with JobEnded.
const (
	JobCreated JobState = iota
	JobRunning
	JobRestarting
	JobFinished
	JobFailed
	JobCanceled
)

func (s JobState) String() string {
	return [...]string{"CREATED", "RUNNING", "RESTARTING", "FINISHED", "FAILED", "CANCELED"}[s]
}

// Terminal reports whether a job in state s has ended.
func (s JobState) Terminal() bool { return s >= JobFinished }

// TM names one TaskManager session to the Machine. The driver maps it to
// a gateway; a TaskManager that registers again is a new TM, so a late
// loss of its old session touches nothing deployed on the new one.
type TM int

// Slot is where one logical slot runs: a TaskManager session and the
// address of its data plane.
type Slot struct {
	TM      TM
	Address string
}

// Placement gives the Machine TaskManagers for logical slots (slot
// sharing: logical slot i runs subtask i of every vertex). Local mode
// places slot i on executor i mod n and never runs short; cluster mode
// asks the JobManager's slot pool. Place is an in-memory decision, called
// from Step: it must not block.
type Placement interface {
	// Place places the logical slots, all or none. A logical slot the job
	// holds keeps its place. When too few slots are free it returns a
	// shortage such as "job demo needs 4 slots, 2 free on 1 TaskManager",
	// and the Machine waits for SlotsOffered or its next retry.
	Place(logical []int) (placed map[int]Slot, shortage string)
}

// RestorePoint is a completed checkpoint or savepoint a deployment
// restores. Own is true when it is in the job's own checkpoint storage;
// else Path locates it (--from another job's folder, a savepoint).
type RestorePoint struct {
	ID   checkpoint.ID
	Own  bool
	Path string
}

func (rp *RestorePoint) String() string {
	if rp == nil {
		return "none"
	}
	if rp.Own {
		return fmt.Sprintf("cp=%d", rp.ID)
	}
	return fmt.Sprintf("cp=%d path=%s", rp.ID, rp.Path)
}

// RequestID names an outside request (checkpoint, savepoint, stop) so the
// driver can route its Answer to whoever asked.
type RequestID int

// RequestKind is what an outside request asks for.
type RequestKind uint8

// The kinds of outside requests.
const (
	// RequestCheckpoint asks for a checkpoint; it is answered with the id
	// once triggered.
	RequestCheckpoint RequestKind = iota
	// RequestSavepoint asks for a checkpoint copied to a target, answered
	// once copied.
	RequestSavepoint
	// RequestStop asks the sources to stop, the final checkpoint to be
	// taken (and copied, with a target) and the job to finish; it is
	// answered once the job ended.
	RequestStop
)

func (k RequestKind) String() string {
	return [...]string{"checkpoint", "savepoint", "stop"}[k]
}

// Group is the part of a fan-out that goes to one TaskManager.
type Group struct {
	TM    TM
	Execs []ExecutionID
}
