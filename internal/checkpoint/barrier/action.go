package barrier

import (
	"fmt"
	"time"

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
//
// Unaligned (set only by the Unaligned handler) means some live channels
// have not delivered Barrier yet: the task snapshots at once, forwards
// Barrier as a priority event, and records the in-flight data of those
// channels as channel state, as the StartRecording and StopRecording actions
// that follow say.
type Snapshot struct {
	Barrier   checkpoint.Barrier
	Unaligned bool
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

// ArmTimer tells the task to step AlignmentTimeout{ID} once its clock reads
// At, unless the handler has moved on by then (a late timeout is harmless).
// Arming a new timer replaces the previous one: at most one is live.
type ArmTimer struct {
	ID checkpoint.ID
	At time.Time
}

// Prioritize tells the task to move the barriers of ID still queued in its
// input gate, and those that arrive later, ahead of the data (the gate's
// priority section), so the channels being recorded deliver them soon.
type Prioritize struct {
	ID checkpoint.ID
}

// StartRecording tells the task to record, as channel state of checkpoint
// ID, every data buffer it polls from Channel from now on: that data was
// sent before the barrier of ID, which Channel has not delivered yet.
type StartRecording struct {
	ID      checkpoint.ID
	Channel int
}

// StopRecording tells the task that Channel delivered the barrier of ID or
// ended: it records the data the gate still holds on Channel ahead of the
// barrier just delivered (none after an end of partition) and then stops
// recording Channel.
type StopRecording struct {
	ID      checkpoint.ID
	Channel int
}

// ChannelStateDone tells the task that the channel state of checkpoint ID is
// complete: every channel recorded for it was stopped, so the recorder can
// be closed and its handle acknowledged with the snapshot.
type ChannelStateDone struct {
	ID checkpoint.ID
}

func (Block) isAction()            {}
func (UnblockAll) isAction()       {}
func (Snapshot) isAction()         {}
func (Abort) isAction()            {}
func (EndOfInput) isAction()       {}
func (ArmTimer) isAction()         {}
func (Prioritize) isAction()       {}
func (StartRecording) isAction()   {}
func (StopRecording) isAction()    {}
func (ChannelStateDone) isAction() {}

// String implements Action.
func (a Block) String() string { return fmt.Sprintf("block ch=%d", a.Channel) }

// String implements Action.
func (UnblockAll) String() string { return "unblock-all" }

// String implements Action.
func (a Snapshot) String() string {
	if a.Unaligned {
		return fmt.Sprintf("snapshot id=%d kind=%s unaligned", a.Barrier.ID, a.Barrier.Kind)
	}
	return fmt.Sprintf("snapshot id=%d kind=%s", a.Barrier.ID, a.Barrier.Kind)
}

// String implements Action.
func (a Abort) String() string { return fmt.Sprintf("abort id=%d reason=%q", a.ID, a.Reason) }

// String implements Action.
func (EndOfInput) String() string { return "end-of-input" }

// String implements Action. At is printed in UTC.
func (a ArmTimer) String() string {
	return fmt.Sprintf("arm-timer id=%d at=%s", a.ID, a.At.UTC().Format(time.RFC3339Nano))
}

// String implements Action.
func (a Prioritize) String() string { return fmt.Sprintf("prioritize id=%d", a.ID) }

// String implements Action.
func (a StartRecording) String() string {
	return fmt.Sprintf("start-recording id=%d ch=%d", a.ID, a.Channel)
}

// String implements Action.
func (a StopRecording) String() string {
	return fmt.Sprintf("stop-recording id=%d ch=%d", a.ID, a.Channel)
}

// String implements Action.
func (a ChannelStateDone) String() string { return fmt.Sprintf("channel-state-done id=%d", a.ID) }
