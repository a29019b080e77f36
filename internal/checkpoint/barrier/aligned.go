package barrier

import "github.com/weirstream/weir/internal/checkpoint"

// Aligned is the exactly-once barrier handler. It aligns one checkpoint at a
// time: the first barrier of a checkpoint newer than any seen starts an
// alignment (Flink's WaitingForFirstBarrier -> CollectingBarriers), each
// channel that delivers the barrier is blocked, and when every channel has
// either delivered it or ended, the handler asks for a Snapshot and unblocks
// all channels.
//
// Ids only move forward. A barrier, cancel marker or abort request for an id
// newer than the one being aligned gives the older alignment up (Abort with
// reason "subsumed by N"): in FIFO channels the older barrier can no longer
// complete once a channel moved past it without delivering it. Events for ids
// older than the newest seen, and for the newest id once it was snapshotted or
// aborted, are ignored.
//
// End of partition on a channel counts that channel as aligned for the
// pending checkpoint and for every later one, because nothing can arrive on
// it any more. So when the last channels end during an alignment, the pending
// checkpoint completes (Snapshot) rather than aborts, and EndOfInput follows
// it. This is what Flink does since it checkpoints after tasks finish; older
// Flink versions aborted the pending checkpoint on end of partition instead.
//
// The zero value is not usable; create one with NewAligned.
type Aligned struct {
	ch channels
	// current is the newest checkpoint id seen in any barrier, cancel
	// marker or abort request; 0 before the first.
	current checkpoint.ID
	// pending is true while current is being aligned: it received a
	// barrier and was neither snapshotted nor aborted.
	pending bool
	alignment
	out []Action
}

var _ Handler = (*Aligned)(nil)

// NewAligned returns an exactly-once handler for a task with numChannels
// input channels. It panics if numChannels < 1.
func NewAligned(numChannels int) *Aligned {
	return &Aligned{
		ch:        newChannels("aligned", numChannels),
		alignment: newAlignment(numChannels),
		out:       make([]Action, 0, 4),
	}
}

// Step applies one event and returns the actions the task must perform, in
// order. The slice is reused by the next Step. See Handler for the events
// that make Step panic.
func (h *Aligned) Step(ev Event) []Action {
	h.out = h.out[:0]
	switch ev := ev.(type) {
	case BarrierArrived:
		h.barrier(ev.Channel, ev.Barrier)
	case CancelArrived:
		h.ch.check(ev.Channel)
		h.abort(ev.ID, cancelledOn(ev.Channel))
	case AbortRequested:
		h.abort(ev.ID, reasonAbortRequested)
	case EndOfPartition:
		h.endOfPartition(ev.Channel)
	}
	return h.out
}

// Pending returns the checkpoint being aligned, if any.
func (h *Aligned) Pending() (checkpoint.ID, bool) {
	return h.current, h.pending
}

// Blocked reports whether the task must not read channel ch: it delivered the
// barrier of the checkpoint being aligned.
func (h *Aligned) Blocked(ch int) bool {
	return h.pending && h.received[ch] && !h.ch.ended[ch]
}

// stale reports whether events for id must be ignored: id is older than the
// newest seen, or it is the newest and already snapshotted or aborted.
func (h *Aligned) stale(id checkpoint.ID) bool {
	return id < h.current || (id == h.current && !h.pending)
}

func (h *Aligned) barrier(ch int, b checkpoint.Barrier) {
	h.ch.check(ch)
	if h.stale(b.ID) {
		return
	}
	if b.ID > h.current {
		h.moveTo(b.ID)
		h.pending = true
		h.begin(b, h.ch.numEnded)
	}
	if !h.deliver(ch) {
		return
	}
	if h.allDone() {
		h.complete()
		return
	}
	h.out = h.block(h.out, ch)
}

// abort handles a cancel marker or an abort request for id.
func (h *Aligned) abort(id checkpoint.ID, reason string) {
	if h.stale(id) {
		return
	}
	if id > h.current {
		h.moveTo(id)
	}
	// id is current now. It is either pending, or it was never started
	// because this very event is the first news of it; either way the task
	// declines it once, and barriers of it are ignored from now on.
	h.out = append(h.out, Abort{ID: id, Reason: reason})
	h.pending = false
	h.out = h.unblockAll(h.out)
}

// moveTo makes id (newer than current) the current checkpoint, giving up a
// pending alignment of the older one.
func (h *Aligned) moveTo(id checkpoint.ID) {
	if h.pending {
		h.out = append(h.out, Abort{ID: h.current, Reason: subsumedBy(id)})
		h.pending = false
		h.out = h.unblockAll(h.out)
	}
	h.current = id
}

func (h *Aligned) endOfPartition(ch int) {
	last := h.ch.end(ch)
	if h.pending {
		h.channelEnded(ch)
		if h.allDone() {
			h.complete()
		}
	}
	if last {
		h.out = append(h.out, EndOfInput{})
	}
}

// complete finishes the alignment of current: snapshot first, so no record
// after the barrier on a blocked channel is processed before the snapshot.
func (h *Aligned) complete() {
	h.out = append(h.out, Snapshot{Barrier: h.first})
	h.pending = false
	h.out = h.unblockAll(h.out)
}
