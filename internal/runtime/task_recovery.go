package runtime

import (
	"context"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/watermark"
)

// Recovery is how the job's consistency mode takes part in a task's loop.
// The barrier modes (exactly-once and at-least-once) snapshot when a
// barrier passes and recover a failed region by restoring all of it from
// one checkpoint: the task loop needs nothing more from them, and they
// hold barrierRecovery, whose every hook does nothing. The mode that
// snapshots each task on its own schedule and recovers one task by
// replaying its inputs from its producers' in-flight logs
// (internal/runtime/weakrt) needs to see what the task polls and fires,
// to add to its snapshots, and to take part in the task's end of input
// and checkpoint notifications; the hooks below are exactly those
// points, called on the task goroutine. It is exported only because that
// mode lives in its own package (ExecRecovery.Setup returns one); the
// task files know only this interface.
type Recovery interface {
	// RestoredAfterEnd reports whether the task restored a snapshot
	// taken after its input ended: the input is ended at once then
	// (its producers do not send their end again).
	RestoredAfterEnd() bool
	// BeforePoll runs before every poll of the gate: it may fire
	// timers and choose the channels the task reads next.
	BeforePoll(ctx context.Context) error
	// Polled sees every polled buffer before the task handles it; skip
	// drops the buffer.
	Polled(ch int, b network.Buffer) (skip bool, err error)
	// FiresTimers reports whether the task fires due processing-time
	// timers on its own clock now; TimersDue is told each such firing,
	// at now (unix ms), before it happens.
	FiresTimers() bool
	TimersDue(now int64)
	// SendsBarriers reports whether a snapshot forwards a barrier to
	// the task's consumers.
	SendsBarriers() bool
	// Snapshot is the mode's part of snapshot id, taken on the task
	// goroutine before the chain's synchronous part; the part it
	// returns finishes on the snapshot's asynchronous goroutine.
	Snapshot(ctx context.Context, id checkpoint.ID) (RecoverySnapshot, error)
	// Completed and Aborted follow the task's checkpoint notifications.
	Completed(id checkpoint.ID) error
	Aborted(id checkpoint.ID)
}

// RecoverySnapshot is a mode's asynchronous part of one snapshot: it adds
// to the task's state what the mode needs to recover it.
type RecoverySnapshot interface {
	Finish(ctx context.Context, sw dataflow.StateWriter, st *checkpoint.TaskState) error
}

// barrierRecovery is Recovery in the barrier modes: nothing to add.
type barrierRecovery struct{}

func (barrierRecovery) RestoredAfterEnd() bool                   { return false }
func (barrierRecovery) BeforePoll(context.Context) error         { return nil }
func (barrierRecovery) Polled(int, network.Buffer) (bool, error) { return false, nil }
func (barrierRecovery) FiresTimers() bool                        { return true }
func (barrierRecovery) TimersDue(int64)                          {}
func (barrierRecovery) SendsBarriers() bool                      { return true }
func (barrierRecovery) Completed(checkpoint.ID) error            { return nil }
func (barrierRecovery) Aborted(checkpoint.ID)                    {}
func (barrierRecovery) Snapshot(context.Context, checkpoint.ID) (RecoverySnapshot, error) {
	return nil, nil
}

// TaskView is what a mode's Recovery may do with its task, and no more:
// the few operations of the task's loop, chain and input bookkeeping that
// a recovery by replay needs. Handed to ExecRecovery.Setup; its methods
// are for the task goroutine (Now also for the snapshot's asynchronous
// part). A view, not the *Task, so that the task's fields stay the task
// loop's own.
type TaskView interface {
	// Task is the subtask it runs.
	Task() checkpoint.TaskID
	// HeadUID is the uid of the chain's first operator, whose state
	// carries the task's snapshot.
	HeadUID() string
	// InputChannels is the number of the task's gate channels, 0 for a
	// source. The mode blocks and unblocks them to replay an order of
	// polls (network.Gate.Block, Unblock, UnblockAll).
	InputChannels() int
	BlockInput(ch int)
	UnblockInput(ch int)
	UnblockInputs()
	// Now is the task's processing-time clock.
	Now() time.Time
	// SetOperatorClock makes now the processing-time clock every
	// operator of the chain reads (dataflow.OperatorContext.Now).
	SetOperatorClock(now func() time.Time)
	// FireTimersAt fires the processing-time timers due at time at
	// (unix ms).
	FireTimersAt(ctx context.Context, at int64) error
	// FlushOutputs sends the open batches of every output writer.
	FlushOutputs(ctx context.Context) error
	// SetRebalancePosition places the round robin of output writer k,
	// if it has one, at records emitted
	// (network.Writer.SetRebalancePosition).
	SetRebalancePosition(k int, records uint64)
	// InputEnded reports whether the chain's input ended (EndInput
	// done).
	InputEnded() bool
	// RestoreChannelEvents gives a restored task what its channels'
	// events before a snapshot's positions said, since no producer
	// replays them: which channels ended, and each channel's last
	// watermark and status for the valve.
	RestoreChannelEvents(ins []checkpoint.WeakChannelPosition)
}

// taskView is a Task's TaskView.
type taskView struct{ t *Task }

var _ TaskView = taskView{}

func (v taskView) Task() checkpoint.TaskID { return v.t.ID }
func (v taskView) HeadUID() string         { return v.t.chain.ocs[0].UID }
func (v taskView) Now() time.Time          { return v.t.now() }
func (v taskView) InputEnded() bool        { return v.t.end.done }
func (v taskView) FireTimersAt(ctx context.Context, at int64) error {
	return v.t.fireTimersAt(ctx, at)
}

func (v taskView) InputChannels() int {
	if v.t.gate == nil {
		return 0
	}
	return v.t.gate.NumChannels()
}

func (v taskView) BlockInput(ch int)   { v.t.gate.Block(ch) }
func (v taskView) UnblockInput(ch int) { v.t.gate.Unblock(ch) }
func (v taskView) UnblockInputs()      { v.t.gate.UnblockAll() }

func (v taskView) SetOperatorClock(now func() time.Time) {
	for _, oc := range v.t.chain.ocs {
		oc.Now = now
	}
}

func (v taskView) FlushOutputs(ctx context.Context) error {
	for _, wr := range v.t.chain.writers {
		if err := wr.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// rebalancePositioner is a writer whose round robin a restarted producer
// places (network.Writer.SetRebalancePosition).
type rebalancePositioner interface{ SetRebalancePosition(records uint64) }

func (v taskView) SetRebalancePosition(k int, records uint64) {
	if k < len(v.t.chain.writers) {
		if rp, ok := v.t.chain.writers[k].(rebalancePositioner); ok {
			rp.SetRebalancePosition(records)
		}
	}
}

// RestoreChannelEvents: the valve's answers are not performed: the
// operators' restored state has seen those watermarks already, and what
// the valve emits next goes downstream as usual.
func (v taskView) RestoreChannelEvents(ins []checkpoint.WeakChannelPosition) {
	t := v.t
	for ch, in := range ins {
		if in.EndOfData && !t.end.ended[ch] {
			t.end.ended[ch] = true
			t.end.count++
		}
		if t.et.valve == nil {
			continue
		}
		if in.Marked {
			t.et.valve.Step(watermark.Advance{Ch: ch, TS: in.Watermark})
		}
		if in.Idle {
			t.et.valve.Step(watermark.Idle{Ch: ch})
		}
	}
	if t.et.valve != nil {
		t.metrics.InputWatermark.Store(t.et.valve.Watermark())
	}
}
