package barrier

import "github.com/weirstream/weir/internal/checkpoint"

// defaultMaxTracked bounds the checkpoints an AtLeastOnce tracker counts at
// once. Without a bound, a channel that stalls while sources keep injecting
// barriers would grow the tracker without limit, and memory must stay
// bounded under any backpressure (docs/architecture.md, "Design rules", 4).
const defaultMaxTracked = 50

// AtLeastOnce is the at-least-once barrier tracker. It never blocks a
// channel; it counts, per checkpoint, the channels that delivered its barrier
// or ended, and asks for a Snapshot when that count reaches all channels.
// Several checkpoints can be counted at once, because without blocking a
// fast channel can deliver barrier N+1 before a slow one delivered N.
//
// Ids only move forward, as in Aligned: a barrier of an id not newer than
// every id seen starts nothing. When checkpoint N snapshots, the older ones
// still counting can no longer matter (the snapshot of N covers at least all
// their records) and are aborted as "subsumed by N"; so snapshot ids strictly
// increase. A cancel marker or abort request for N aborts N and, as in Flink,
// every older checkpoint still counting. One for an id that is not counting
// and not newer than every id seen is ignored: that id is already decided, or
// its barriers will be ignored anyway.
//
// End of partition counts the channel for every checkpoint, present and
// future; when the last channel ends, every counted checkpoint completes, in
// id order, followed by EndOfInput.
//
// The zero value is not usable; create one with NewAtLeastOnce.
type AtLeastOnce struct {
	ch channels
	// latest is the newest checkpoint id seen in any event; 0 before the
	// first.
	latest checkpoint.ID
	// counting holds the checkpoints that received a barrier and are
	// neither snapshotted nor aborted, in increasing id order.
	counting   []*count
	free       []*count
	maxTracked int
	out        []Action
}

// count is the barrier count of one checkpoint.
type count struct {
	first    checkpoint.Barrier
	received []bool
	done     int
}

var _ Handler = (*AtLeastOnce)(nil)

// NewAtLeastOnce returns an at-least-once tracker for a task with
// numChannels input channels. It panics if numChannels < 1.
func NewAtLeastOnce(numChannels int) *AtLeastOnce {
	return &AtLeastOnce{
		ch:         newChannels("at-least-once", numChannels),
		maxTracked: defaultMaxTracked,
		out:        make([]Action, 0, 4),
	}
}

// Step applies one event and returns the actions the task must perform, in
// order; never Block or UnblockAll. The slice is reused by the next Step.
// See Handler for the events that make Step panic.
func (t *AtLeastOnce) Step(ev Event) []Action {
	t.out = t.out[:0]
	switch ev := ev.(type) {
	case BarrierArrived:
		t.barrier(ev.Channel, ev.Barrier)
	case CancelArrived:
		t.ch.check(ev.Channel)
		t.abort(ev.ID, cancelledOn(ev.Channel))
	case AbortRequested:
		t.abort(ev.ID, reasonAbortRequested)
	case EndOfPartition:
		t.endOfPartition(ev.Channel)
	}
	return t.out
}

// Pending returns the newest checkpoint being counted, if any.
func (t *AtLeastOnce) Pending() (checkpoint.ID, bool) {
	if len(t.counting) == 0 {
		return 0, false
	}
	return t.counting[len(t.counting)-1].first.ID, true
}

// Blocked is always false: the tracker never blocks.
func (t *AtLeastOnce) Blocked(int) bool { return false }

func (t *AtLeastOnce) barrier(ch int, b checkpoint.Barrier) {
	t.ch.check(ch)
	i := t.find(b.ID)
	var c *count
	switch {
	case i >= 0:
		c = t.counting[i]
		if c.received[ch] {
			return // a duplicate barrier; counting it would complete early
		}
	case b.ID > t.latest:
		t.latest = b.ID
		c = t.newCount(b)
		t.counting = append(t.counting, c)
		i = len(t.counting) - 1
	default:
		return // snapshotted, aborted, or older than one already started
	}
	c.received[ch] = true
	c.done++
	if c.done == len(c.received) {
		t.complete(i)
		return
	}
	if len(t.counting) > t.maxTracked {
		t.out = append(t.out, Abort{ID: t.counting[0].first.ID, Reason: reasonTooMany})
		t.release(0, 1)
	}
}

// abort handles a cancel marker or an abort request for id.
func (t *AtLeastOnce) abort(id checkpoint.ID, reason string) {
	i := t.find(id)
	if i < 0 && id <= t.latest {
		return // already snapshotted or aborted, or never started
	}
	// Older checkpoints still counting go first: snapshots must increase,
	// and a cancel for id means the upstream moved past them.
	n := 0
	for n < len(t.counting) && t.counting[n].first.ID < id {
		t.out = append(t.out, Abort{ID: t.counting[n].first.ID, Reason: subsumedBy(id)})
		n++
	}
	t.out = append(t.out, Abort{ID: id, Reason: reason})
	if i >= 0 {
		n++
	}
	t.release(0, n)
	t.latest = max(t.latest, id)
}

func (t *AtLeastOnce) endOfPartition(ch int) {
	last := t.ch.end(ch)
	for _, c := range t.counting {
		if !c.received[ch] {
			c.done++
		}
	}
	// Complete from the oldest: each completion aborts the older ones
	// still counting and shifts the rest down, so restart the scan.
	for i := 0; i < len(t.counting); {
		if t.counting[i].done == len(t.counting[i].received) {
			t.complete(i)
			i = 0
			continue
		}
		i++
	}
	if last {
		t.out = append(t.out, EndOfInput{})
	}
}

// complete snapshots counting[i] and gives up the older ones.
func (t *AtLeastOnce) complete(i int) {
	id := t.counting[i].first.ID
	for j := 0; j < i; j++ {
		t.out = append(t.out, Abort{ID: t.counting[j].first.ID, Reason: subsumedBy(id)})
	}
	t.out = append(t.out, Snapshot{Barrier: t.counting[i].first})
	t.release(0, i+1)
}

// find returns the index of id in counting, or -1.
func (t *AtLeastOnce) find(id checkpoint.ID) int {
	for i, c := range t.counting {
		if c.first.ID == id {
			return i
		}
	}
	return -1
}

// newCount returns a count for b with the ended channels already counted,
// reusing a released one to keep Step allocation-free in steady state.
func (t *AtLeastOnce) newCount(b checkpoint.Barrier) *count {
	var c *count
	if n := len(t.free); n > 0 {
		c, t.free = t.free[n-1], t.free[:n-1]
	} else {
		c = &count{received: make([]bool, len(t.ch.ended))}
	}
	c.first = b
	copy(c.received, t.ch.ended)
	c.done = t.ch.numEnded
	return c
}

// release removes counting[from:to] and keeps the counts for reuse.
func (t *AtLeastOnce) release(from, to int) {
	t.free = append(t.free, t.counting[from:to]...)
	n := copy(t.counting[from:], t.counting[to:])
	clear(t.counting[from+n:])
	t.counting = t.counting[:from+n]
}
