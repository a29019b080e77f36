package runtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/barrier"
	"github.com/weirstream/weir/internal/network"
)

// This file holds the task's side of unaligned checkpoints: performing the
// recording actions of barrier.Unaligned, the alignment timer, and waiting
// out an overdraft while still taking priority events and mail.

// unalignedState is what a task keeps for unaligned checkpoints: the
// mode, the per-channel codecs, the recorder of the checkpoint being
// recorded and the alignment timer. (chans also serve remote decoding and,
// in aligned mode, the measuring of what alignment holds back.)
type unalignedState struct {
	enabled bool // the job takes unaligned checkpoints
	// priorityTriggers: a source sends periodic barriers as priority
	// events (pure unaligned mode, no alignment timeout).
	priorityTriggers bool
	// inBand[k] says output k's consumer aligns its barriers whatever the
	// mode (dataflow.Node.AlignedBarriers): a barrier goes to it in band,
	// behind the data, never as a priority event.
	inBand          []bool
	chans           []channelInfo // per gate channel, when needed
	rec             *channelRecorder
	maxChannelState int64
	alignAt         time.Time     // alignment timer, zero when not armed; monotonic
	alignTimeout    time.Duration // execution.checkpointing.aligned-checkpoint-timeout
	alignID         checkpoint.ID
	overtaken       []any // reused by StopRecording
	// lastSeq[c] is the Seq of the last data buffer polled from gate
	// channel c (unaligned checkpoints: what a priority barrier overtook).
	lastSeq []uint64
	// abortRecording is a checkpoint whose channel state overflowed; it is
	// aborted once the current handler actions are performed.
	abortRecording checkpoint.ID
}

// alignedOutput reports whether output k's consumer aligns its barriers
// whatever the mode (inBand), so that a barrier goes to it in band.
func (u *unalignedState) alignedOutput(k int) bool { return k < len(u.inBand) && u.inBand[k] }

// performRecording carries out the handler actions specific to unaligned
// checkpoints; ok is false for any other action. cur is the buffer being
// handled, if any (see perform).
func (t *Task) performRecording(ctx context.Context, cur *polled, a barrier.Action) (ok bool, err error) {
	switch a := a.(type) {
	case barrier.ArmTimer:
		t.ua.alignAt, t.ua.alignID = t.alignDeadline(a.At), a.ID
	case barrier.Prioritize:
		t.gate.Prioritize(a.ID)
		if t.links != nil {
			t.links.prioritize(a.ID)
		}
	case barrier.StartRecording:
		if t.ua.rec == nil || t.ua.rec.id != a.ID {
			return true, fmt.Errorf("checkpoint %d: start recording channel %d without its recorder", a.ID, a.Channel)
		}
		t.ua.rec.start(a.Channel)
	case barrier.StopRecording:
		if t.ua.rec == nil || t.ua.rec.id != a.ID {
			return true, fmt.Errorf("checkpoint %d: stop recording channel %d without its recorder", a.ID, a.Channel)
		}
		// A priority barrier overtook the data still queued on its channel
		// ahead of it: that data belongs to the checkpoint. (An ordinary
		// barrier comes after all its channel's earlier data was polled; an
		// end of partition has nothing behind it.)
		if cur != nil && cur.ch == a.Channel && cur.buf.Kind == network.Barrier && cur.buf.Priority {
			t.ua.overtaken = t.gate.AppendOvertaken(t.ua.overtaken[:0], a.Channel, cur.buf.Seq)
			for _, d := range t.ua.overtaken {
				if err := t.ua.rec.record(ctx, a.Channel, d); err != nil {
					clear(t.ua.overtaken)
					return true, t.recordFailed(err)
				}
			}
			// Data numbers are consecutive per channel: what was polled
			// plus what was queued should reach the barrier's Seq. Less
			// means the rest is still on its way (remote channels).
			covered := t.ua.lastSeq[a.Channel] + uint64(len(t.ua.overtaken))
			clear(t.ua.overtaken)
			if covered < cur.buf.Seq && !t.ua.rec.overflow {
				t.ua.rec.awaitUntil(a.Channel, covered, cur.buf.Seq)
				return true, nil
			}
		}
		t.ua.rec.stop(a.Channel)
	case barrier.ChannelStateDone:
		if t.ua.rec == nil || t.ua.rec.id != a.ID {
			return true, fmt.Errorf("checkpoint %d: channel state done without its recorder", a.ID)
		}
		if t.ua.rec.waiting() {
			// Finished by recordData once the last overtaken data arrived.
			t.ua.rec.finishing = true
			return true, nil
		}
		rec := t.ua.rec
		t.ua.rec = nil
		t.alignmentDone(rec)
		return true, rec.finish(ctx)
	default:
		return false, nil
	}
	return true, nil
}

// recordData records one polled batch of a recording channel before the
// chain consumes (and recycles) it.
func (t *Task) recordData(ctx context.Context, ch int, data any, seq uint64) error {
	if t.ua.rec.until[ch] != 0 && seq <= t.ua.rec.from[ch] {
		// Recorded as overtaken when the barrier was polled; polled now.
		return nil
	}
	if err := t.ua.rec.record(ctx, ch, data); err != nil {
		return t.recordFailed(err)
	}
	if t.ua.rec.arrived(ch, seq) && t.ua.rec.finishing && !t.ua.rec.waiting() {
		rec := t.ua.rec
		t.ua.rec = nil
		return rec.finish(ctx)
	}
	return nil
}

// recordFailed decides what a recording error means: an oversized channel
// state declines only its checkpoint (the handler aborts it once the
// current actions are done); anything else fails the task.
func (t *Task) recordFailed(err error) error {
	if errors.Is(err, errChannelStateTooLarge) {
		t.logger.Warn("declining checkpoint: channel state too large", "checkpoint", t.ua.rec.id, "err", err)
		t.ua.abortRecording = t.ua.rec.id
		t.ua.rec.stopAll()
		return nil
	}
	return err
}

// afterActions steps an abort that recording asked for while the handler's
// actions were performed (Step must not be re-entered meanwhile). Its
// actions answer the same buffer cur as those that asked.
func (t *Task) afterActions(ctx context.Context, cur *polled) error {
	if t.ua.abortRecording == 0 {
		return nil
	}
	id := t.ua.abortRecording
	t.ua.abortRecording = 0
	return t.perform(ctx, cur, t.ckpt.handler.Step(barrier.AbortRequested{ID: id}))
}

// attachChannelState waits for rec's file and puts its handle on the head
// operator's state. Runs on the asynchronous snapshot goroutine.
func (t *Task) attachChannelState(ctx context.Context, rec *channelRecorder, st *checkpoint.TaskState) error {
	h, _, err := rec.result(ctx)
	if err != nil || h == nil {
		return err
	}
	uid := t.chain.ocs[0].UID
	rows := channelRows(rec, h)
	for i := range st.Operators {
		if st.Operators[i].UID == uid {
			st.Operators[i].Channels = h
			st.Operators[i].Schemas = append(st.Operators[i].Schemas, rows...)
			return nil
		}
	}
	// The head operator has no state of its own (a stateless map): its
	// entry carries only the channel state.
	st.Operators = append([]checkpoint.OperatorSubtaskState{{UID: uid, Channels: h, Schemas: rows}}, st.Operators...)
	return nil
}

// channelRows are the state-table rows of the in-flight records h holds:
// one per input, named "in<i>", with the input's record type.
func channelRows(rec *channelRecorder, h *checkpoint.ChannelStateHandle) []checkpoint.StateSchema {
	var rows []checkpoint.StateSchema
	done := map[int]bool{}
	for _, c := range h.Channels {
		if done[c.Input] {
			continue
		}
		done[c.Input] = true
		for _, info := range rec.chans {
			if info.input == c.Input && info.codec != nil {
				r := checkpoint.StateSchema{Name: "in" + strconv.Itoa(c.Input), Scope: checkpoint.ScopeChannel, Value: info.codec.Schema()}
				r.Fingerprint = checkpoint.SchemaFingerprint(r)
				rows = append(rows, r)
				break
			}
		}
	}
	return rows
}

// alignDeadline turns the handler's alignment deadline (the checkpoint's
// timestamp plus the timeout) into a deadline on this task's monotonic
// clock. The timestamp has a monotonic reading only when it was taken in
// this process and never crossed a wire (a barrier from a remote channel,
// a trigger from a JobManager in another process carries unix
// nanoseconds): then at.Sub(now) is a wall-clock difference, which a step
// of either wall clock, or skew between JobManager and TaskManager, would
// move by hours. So the wait left is read once and bounded by the timeout
// itself: a jump back cannot hold the switch to unaligned longer than the
// timeout, a jump forward switches at once, and the armed deadline then
// runs on monotonic time.
func (t *Task) alignDeadline(at time.Time) time.Time {
	now := t.now()
	left := at.Sub(now)
	if t.ua.alignTimeout > 0 {
		left = min(left, t.ua.alignTimeout)
	}
	return now.Add(max(left, 0))
}

// checkAlignTimer steps the alignment timeout once the clock passed the
// armed time. One branch per buffer when no timer is armed.
func (t *Task) checkAlignTimer(ctx context.Context) error {
	if t.ua.alignAt.IsZero() || t.now().Before(t.ua.alignAt) {
		return nil
	}
	id := t.ua.alignID
	t.ua.alignAt = time.Time{}
	return t.perform(ctx, nil, t.ckpt.handler.Step(barrier.AlignmentTimeout{ID: id}))
}

// awaitOutput waits while the task's writers are in debt (some channel
// holds more batches than its credits). Meanwhile it handles mail (so a
// source takes checkpoint triggers under backpressure), priority events of
// the gate (so an unaligned barrier passes a backpressured task) and the
// alignment timer. withGate is false for sources and during replay. The
// cost when not in debt is one atomic load.
func (t *Task) awaitOutput(ctx context.Context, withGate bool) error {
	for t.out.debt != nil && t.out.debt.InDebt() {
		t.metrics.debtWaits.Add(1)
		var prio <-chan struct{}
		if withGate && t.gate != nil {
			prio = t.gate.PriorityReady()
		}
		var timerC <-chan time.Time
		var tm *time.Timer
		if !t.ua.alignAt.IsZero() {
			d := t.ua.alignAt.Sub(t.now())
			if d <= 0 {
				if err := t.checkAlignTimer(ctx); err != nil {
					return err
				}
				continue
			}
			tm = time.NewTimer(d)
			timerC = tm.C
		}
		err := t.awaitOnce(ctx, prio, timerC)
		if tm != nil {
			tm.Stop()
		}
		if err != nil || t.ckpt.finished {
			return err
		}
	}
	return nil
}

// awaitOnce waits for one of awaitOutput's wake-ups and handles it.
func (t *Task) awaitOnce(ctx context.Context, prio <-chan struct{}, timerC <-chan time.Time) error {
	t.metrics.busy.beginWait(t.now())
	select {
	case <-t.out.debt.Ready():
		t.metrics.busy.endWait(t.now())
	case <-t.mail.ready:
		t.metrics.busy.endWait(t.now())
		return t.handleMail(ctx)
	case <-prio:
		t.metrics.busy.endWait(t.now())
		for {
			ch, buf, ok := t.gate.PollPriority()
			if !ok {
				return nil
			}
			if err := t.handleBuffer(ctx, ch, buf); err != nil {
				return err
			}
		}
	case <-timerC:
		t.metrics.busy.endWait(t.now())
		return t.checkAlignTimer(ctx)
	case <-ctx.Done():
		t.metrics.busy.endWait(t.now())
		return ctx.Err()
	}
	return nil
}
