package barrier

import (
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Action is an output of a Handler that the task loop performs, in the order
// returned. The set of actions is closed.
type Action interface {
	isAction()
	// String renders the action as in logs and golden files.
	String() string
}

// Block tells the task to stop reading Channel: it delivered the barrier of
// the checkpoint being aligned, and what follows belongs to the next one.
type Block struct {
	Channel int
}

// UnblockAll tells the task to resume reading every blocked channel, because
// the alignment it was blocked for completed or was given up.
type UnblockAll struct{}

// Snapshot tells the task that every live channel delivered Barrier: it must
// snapshot its operators' state for Barrier.ID and then forward Barrier to all
// its outputs, before it processes any further record.
type Snapshot struct {
	Barrier checkpoint.Barrier
}

// Abort tells the task that checkpoint ID cannot complete here: it must
// decline ID to the JobManager and forward a cancel marker for ID to all its
// outputs, so downstream tasks stop aligning it too.
type Abort struct {
	ID     checkpoint.ID
	Reason string
}

// EndOfInput tells the task that every input channel reached its end of
// partition; it is returned once, after any Snapshot the last end completed.
type EndOfInput struct{}

func (Block) isAction()      {}
func (UnblockAll) isAction() {}
func (Snapshot) isAction()   {}
func (Abort) isAction()      {}
func (EndOfInput) isAction() {}

// String implements Action.
func (a Block) String() string { return fmt.Sprintf("block ch=%d", a.Channel) }

// String implements Action.
func (UnblockAll) String() string { return "unblock-all" }

// String implements Action.
func (a Snapshot) String() string {
	return fmt.Sprintf("snapshot id=%d kind=%s", a.Barrier.ID, a.Barrier.Kind)
}

// String implements Action.
func (a Abort) String() string { return fmt.Sprintf("abort id=%d reason=%q", a.ID, a.Reason) }

// String implements Action.
func (EndOfInput) String() string { return "end-of-input" }
