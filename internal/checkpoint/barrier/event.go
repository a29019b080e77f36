package barrier

import "github.com/weirstream/weir/internal/checkpoint"

// Event is an input to a Handler: something the task read from an input
// channel, or a control message from the JobManager. The set of events is
// closed; the task loop creates them, the handler consumes them.
type Event interface {
	isEvent()
}

// BarrierArrived reports that Barrier was read from input channel Channel.
type BarrierArrived struct {
	Channel int
	Barrier checkpoint.Barrier
}

// CancelArrived reports a cancel marker for checkpoint ID on Channel: an
// upstream task aborted that checkpoint and sent the marker in place of the
// barrier, so the barrier of ID will never arrive on this channel.
type CancelArrived struct {
	Channel int
	ID      checkpoint.ID
}

// EndOfPartition reports that Channel is finished for good: nothing, not even
// a barrier, will arrive on it again.
type EndOfPartition struct {
	Channel int
}

// AbortRequested reports that checkpoint ID must be given up: the JobManager
// notified its abort, or the task's own snapshot of it failed.
type AbortRequested struct {
	ID checkpoint.ID
}

func (BarrierArrived) isEvent() {}
func (CancelArrived) isEvent()  {}
func (EndOfPartition) isEvent() {}
func (AbortRequested) isEvent() {}
