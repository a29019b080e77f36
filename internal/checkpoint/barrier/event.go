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
	// Priority is copied from the buffer: the barrier was sent as a
	// priority event and overtook the data queued ahead of it. Only
	// Unaligned reads it; the other handlers treat every barrier alike.
	Priority bool
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

// BarrierAnnounced reports that Barrier is queued on Channel behind data
// (Flink's EventAnnouncement): the gate announces it ahead of the data so
// that Unaligned in alternating mode can start its alignment timer before
// the barrier itself is polled.
type BarrierAnnounced struct {
	Channel int
	Barrier checkpoint.Barrier
}

// AlignmentTimeout reports that the timer of an ArmTimer for checkpoint ID
// fired. The task sends it whether or not ID still aligns; Unaligned ignores
// a timeout that no longer matters.
type AlignmentTimeout struct {
	ID checkpoint.ID
}

func (BarrierArrived) isEvent()   {}
func (CancelArrived) isEvent()    {}
func (EndOfPartition) isEvent()   {}
func (AbortRequested) isEvent()   {}
func (BarrierAnnounced) isEvent() {}
func (AlignmentTimeout) isEvent() {}
