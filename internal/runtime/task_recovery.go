package runtime

import (
	"context"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/network"
)

// recovery is how the job's consistency mode takes part in a task's loop.
// The barrier modes (exactly-once and at-least-once) snapshot when a
// barrier passes and recover a failed region by restoring all of it from
// one checkpoint: the task loop needs nothing more from them, and they
// hold barrierRecovery, whose every hook does nothing. The mode that
// snapshots each task on its own schedule and recovers one task by
// replaying its inputs from its producers' in-flight logs needs to see
// what the task polls and fires, to add to its snapshots, and to take
// part in the task's end of input and checkpoint notifications; the hooks
// below are exactly those points, called on the task goroutine. Its
// implementation is set at deployment and lives with the rest of that
// mode's runtime; the task files know only this interface.
type recovery interface {
	// restoredAfterEnd reports whether the task restored a snapshot
	// taken after its input ended: the input is ended at once then
	// (its producers do not send their end again).
	restoredAfterEnd() bool
	// beforePoll runs before every poll of the gate: it may fire
	// timers and choose the channels the task reads next.
	beforePoll(ctx context.Context) error
	// polled sees every polled buffer before the task handles it; skip
	// drops the buffer.
	polled(ch int, b network.Buffer) (skip bool, err error)
	// firesTimers reports whether the task fires due processing-time
	// timers on its own clock now; timersDue is told each such firing,
	// at now (unix ms), before it happens.
	firesTimers() bool
	timersDue(now int64)
	// sendsBarriers reports whether a snapshot forwards a barrier to
	// the task's consumers.
	sendsBarriers() bool
	// snapshot is the mode's part of snapshot id, taken on the task
	// goroutine before the chain's synchronous part; the part it
	// returns finishes on the snapshot's asynchronous goroutine.
	snapshot(ctx context.Context, id checkpoint.ID) (recoverySnapshot, error)
	// completed and aborted follow the task's checkpoint notifications.
	completed(id checkpoint.ID) error
	aborted(id checkpoint.ID)
}

// recoverySnapshot is a mode's asynchronous part of one snapshot: it adds
// to the task's state what the mode needs to recover it.
type recoverySnapshot interface {
	finish(ctx context.Context, sw dataflow.StateWriter, st *checkpoint.TaskState) error
}

// barrierRecovery is recovery in the barrier modes: nothing to add.
type barrierRecovery struct{}

func (barrierRecovery) restoredAfterEnd() bool                   { return false }
func (barrierRecovery) beforePoll(context.Context) error         { return nil }
func (barrierRecovery) polled(int, network.Buffer) (bool, error) { return false, nil }
func (barrierRecovery) firesTimers() bool                        { return true }
func (barrierRecovery) timersDue(int64)                          {}
func (barrierRecovery) sendsBarriers() bool                      { return true }
func (barrierRecovery) completed(checkpoint.ID) error            { return nil }
func (barrierRecovery) aborted(checkpoint.ID)                    {}
func (barrierRecovery) snapshot(context.Context, checkpoint.ID) (recoverySnapshot, error) {
	return nil, nil
}
