package barrier

import (
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// phase is where Unaligned stands with its current checkpoint.
type phase uint8

const (
	// idle: no checkpoint pending; the current one, if any, is decided.
	idle phase = iota
	// announced: alternating mode, a barrier was announced and the timer
	// armed, but no barrier of current was polled yet.
	announced
	// aligning: channels that delivered current's barrier are blocked
	// (alternating mode before its timeout, and forced-aligned kinds).
	aligning
	// recording: current was snapshotted unaligned; the channels that have
	// not delivered its barrier are being recorded.
	recording
)

// String names the phase as in golden files.
func (p phase) String() string {
	switch p {
	case announced:
		return "announced"
	case aligning:
		return "aligning"
	case recording:
		return "recording"
	}
	return "idle"
}

// Unaligned is the exactly-once barrier handler for unaligned checkpoints.
// With an alignment timeout of 0 (pure unaligned) the first barrier of a
// checkpoint snapshots at once: the task forwards the barrier as a priority
// event and records, as channel state, the data it overtook on its channel
// and the data each other live channel delivers until its own barrier. With
// a timeout above 0 (alternating) a checkpoint starts aligned, as in
// Aligned, and switches to unaligned when its timer fires or when a priority
// barrier shows that an upstream task already switched. Final checkpoints
// and savepoints (Kind != Periodic) are always aligned and give exactly
// Aligned's actions.
//
// It tracks one checkpoint at a time. As in Aligned, ids only move forward,
// events for older ids or for a decided id are ignored, and an event for a
// newer id aborts the pending checkpoint, also while it records. A
// checkpoint stays pending while it records: its snapshot is useless until
// ChannelStateDone, and an abort then still declines it.
//
// Unaligned reads no clock: ArmTimer's At is the barrier's timestamp plus
// the timeout, and the task steps AlignmentTimeout when its clock passes it.
//
// The zero value is not usable; create one with NewUnaligned.
type Unaligned struct {
	ch      channels
	timeout time.Duration
	// current is the newest checkpoint id seen in any barrier,
	// announcement, cancel marker or abort request; 0 before the first.
	current checkpoint.ID
	phase   phase
	// alignment counts current's barriers; its first is current's barrier
	// as first seen (announced or delivered).
	alignment
	// armed is true once a timer was armed for current (at most one).
	armed bool
	// rec[c] is true while channel c records for current; numRec counts
	// them.
	rec    []bool
	numRec int
	out    []Action
}

var _ Handler = (*Unaligned)(nil)

// NewUnaligned returns an unaligned handler for a task with numChannels
// input channels: pure unaligned if alignedTimeout is 0, alternating
// (aligned first, unaligned after alignedTimeout) if it is above 0. It
// panics if numChannels < 1 or alignedTimeout < 0.
func NewUnaligned(numChannels int, alignedTimeout time.Duration) *Unaligned {
	if alignedTimeout < 0 {
		panic("barrier: unaligned handler needs an alignment timeout >= 0, got " + alignedTimeout.String())
	}
	return &Unaligned{
		ch:        newChannels("unaligned", numChannels),
		timeout:   alignedTimeout,
		alignment: newAlignment(numChannels),
		rec:       make([]bool, numChannels),
		out:       make([]Action, 0, 4+numChannels),
	}
}

// Step applies one event and returns the actions the task must perform, in
// order. The slice is reused by the next Step. See Handler for the events
// that make Step panic.
func (h *Unaligned) Step(ev Event) []Action {
	h.out = h.out[:0]
	switch ev := ev.(type) {
	case BarrierArrived:
		h.barrier(ev.Channel, ev.Barrier, ev.Priority)
	case BarrierAnnounced:
		h.announce(ev.Channel, ev.Barrier)
	case AlignmentTimeout:
		h.alignmentTimeout(ev.ID)
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

// Pending returns the current checkpoint while it is announced, aligning or
// recording.
func (h *Unaligned) Pending() (checkpoint.ID, bool) {
	return h.current, h.phase != idle
}

// Blocked reports whether the task must not read channel ch: it delivered
// the barrier of the checkpoint being aligned.
func (h *Unaligned) Blocked(ch int) bool {
	return h.phase == aligning && h.received[ch] && !h.ch.ended[ch]
}

// Recording reports whether the task must record the data it polls from
// channel ch as channel state of the pending checkpoint.
func (h *Unaligned) Recording(ch int) bool {
	return h.phase == recording && h.rec[ch]
}

// Phase names the handler's phase (idle, announced, aligning or recording),
// for logs and tests.
func (h *Unaligned) Phase() string { return h.phase.String() }

func (h *Unaligned) stale(id checkpoint.ID) bool {
	return id < h.current || (id == h.current && h.phase == idle)
}

// forced reports whether current must be aligned whatever the mode.
func (h *Unaligned) forced() bool { return h.first.Kind != checkpoint.Periodic }

// start makes b's id, newer than current, the current checkpoint.
func (h *Unaligned) start(b checkpoint.Barrier) {
	h.moveTo(b.ID)
	h.begin(b, h.ch.numEnded)
	h.armed = false
}

func (h *Unaligned) barrier(ch int, b checkpoint.Barrier, priority bool) {
	h.ch.check(ch)
	if h.stale(b.ID) {
		return
	}
	if b.ID > h.current {
		h.start(b)
	}
	if !h.deliver(ch) {
		return
	}
	switch {
	case h.phase == recording:
		h.stopRecording(ch)
	case h.forced():
		h.alignedBarrier(ch)
	case h.timeout == 0 || priority:
		h.snapshotUnaligned(ch, true)
	default:
		if h.phase == idle && !h.allDone() {
			h.armTimer()
		}
		h.alignedBarrier(ch)
	}
}

// alignedBarrier is Aligned's rule for a barrier on ch: block it, or
// snapshot when it was the last live channel.
func (h *Unaligned) alignedBarrier(ch int) {
	if h.allDone() {
		h.completeAligned()
		return
	}
	h.out = h.block(h.out, ch)
	h.phase = aligning
}

func (h *Unaligned) armTimer() {
	h.armed = true
	h.out = append(h.out, ArmTimer{ID: h.current, At: h.first.Timestamp.Add(h.timeout)})
}

// snapshotUnaligned snapshots current unaligned and records every live
// channel that has not delivered its barrier. If delivered is true, the
// event is current's barrier on ch, so ch's overtaken data is recorded too.
func (h *Unaligned) snapshotUnaligned(ch int, delivered bool) {
	h.out = append(h.out, Snapshot{Barrier: h.first, Unaligned: true})
	if h.timeout > 0 {
		h.out = append(h.out, Prioritize{ID: h.current})
	}
	if delivered {
		h.out = append(h.out, StopRecording{ID: h.current, Channel: ch})
	}
	for c, got := range h.received {
		if !got && !h.ch.ended[c] {
			h.rec[c] = true
			h.numRec++
			h.out = append(h.out, StartRecording{ID: h.current, Channel: c})
		}
	}
	h.out = h.unblockAll(h.out)
	h.phase = recording
	if h.numRec == 0 {
		h.channelStateDone()
	}
}

// stopRecording ends the recording of ch, which delivered current's barrier
// or ended, and completes the channel state after the last one.
func (h *Unaligned) stopRecording(ch int) {
	if !h.rec[ch] {
		return
	}
	h.rec[ch] = false
	h.numRec--
	h.out = append(h.out, StopRecording{ID: h.current, Channel: ch})
	if h.numRec == 0 {
		h.channelStateDone()
	}
}

func (h *Unaligned) channelStateDone() {
	h.out = append(h.out, ChannelStateDone{ID: h.current})
	h.phase = idle
}

func (h *Unaligned) announce(ch int, b checkpoint.Barrier) {
	h.ch.check(ch)
	// Announcements matter only to the alignment timer of a periodic
	// checkpoint; anything else keeps Aligned's behaviour for forced
	// kinds, and pure unaligned mode has no timer.
	if h.timeout == 0 || b.Kind != checkpoint.Periodic || b.ID <= h.current {
		return
	}
	h.start(b)
	h.phase = announced
	h.armTimer()
}

func (h *Unaligned) alignmentTimeout(id checkpoint.ID) {
	if id != h.current || !h.armed || (h.phase != announced && h.phase != aligning) {
		return // late, or for a checkpoint that is no longer aligning
	}
	h.snapshotUnaligned(-1, false)
}

// abort handles a cancel marker or an abort request for id.
func (h *Unaligned) abort(id checkpoint.ID, reason string) {
	if h.stale(id) {
		return
	}
	if id > h.current {
		h.moveTo(id)
	}
	h.out = append(h.out, Abort{ID: id, Reason: reason})
	h.drop()
}

// moveTo makes id (newer than current) the current checkpoint, giving up a
// pending older one.
func (h *Unaligned) moveTo(id checkpoint.ID) {
	if h.phase != idle {
		h.out = append(h.out, Abort{ID: h.current, Reason: subsumedBy(id)})
		h.drop()
	}
	h.current = id
}

// drop forgets the pending checkpoint after an Abort: the task drops its
// recorder with it, so no StopRecording follows.
func (h *Unaligned) drop() {
	h.phase = idle
	h.out = h.unblockAll(h.out)
	clear(h.rec)
	h.numRec = 0
}

func (h *Unaligned) endOfPartition(ch int) {
	last := h.ch.end(ch)
	switch h.phase {
	case recording:
		h.stopRecording(ch)
	case announced, aligning:
		h.channelEnded(ch)
		if h.allDone() {
			h.completeAligned()
		}
	}
	if last {
		h.out = append(h.out, EndOfInput{})
	}
}

// completeAligned snapshots current aligned: every live channel delivered
// its barrier. Snapshot comes first, so no record after a barrier on a
// blocked channel is processed before it.
func (h *Unaligned) completeAligned() {
	h.out = append(h.out, Snapshot{Barrier: h.first})
	h.phase = idle
	h.out = h.unblockAll(h.out)
}
