package runtime

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint/barrier"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/network"
)

// inputEnd is the end-of-data bookkeeping of a task: which gate channels
// delivered EndOfData, and whether the chain's input ended (EndInput done,
// EndOfData sent downstream and to the JobManager; sources too).
type inputEnd struct {
	done  bool
	ended []bool // per gate channel
	count int    // channels in ended that are true
}

// arrived notes channel ch's EndOfData and tells whether it was the last.
func (e *inputEnd) arrived(ch int) (last bool, err error) {
	if e.ended[ch] {
		return false, fmt.Errorf("channel %d delivered end of data twice", ch)
	}
	e.ended[ch] = true
	e.count++
	return e.count == len(e.ended), nil
}

// runInput is the loop of a task with inputs. Each iteration handles pending
// control messages, then one buffer from the gate: a batch of records goes
// through the chain; a barrier, cancel marker or end of data goes to the
// barrier handler, whose actions the task performs.
func (t *Task) runInput(ctx context.Context) error {
	if t.replay.parts != nil {
		if err := t.replayChannelState(ctx); err != nil {
			return err
		}
	}
	if t.rec.RestoredAfterEnd() {
		// Restored from a snapshot taken after the input ended: its
		// producers do not send their end of data again, so end the
		// input now.
		if err := t.endInput(ctx); err != nil {
			return err
		}
	}
	ready := t.gate.Ready()
	for {
		if t.mail.pending() {
			if err := t.handleMail(ctx); err != nil {
				return err
			}
		}
		if t.ckpt.finished {
			return nil
		}
		if err := t.awaitOutput(ctx, true); err != nil {
			return err
		}
		if t.ckpt.finished {
			return nil
		}
		if err := t.checkAlignTimer(ctx); err != nil {
			return err
		}
		if err := t.rec.BeforePoll(ctx); err != nil {
			return err
		}
		ch, buf, ok := t.gate.Poll()
		if ok {
			skip, err := t.rec.Polled(ch, buf)
			if err != nil {
				return err
			}
			if skip {
				continue
			}
		}
		if !ok {
			if err := t.fireTimers(ctx); err != nil {
				return err
			}
			if err := t.maybeFlush(ctx); err != nil {
				return err
			}
			if err := t.maybeEmitPeriodic(ctx); err != nil {
				return err
			}
			if err := t.waitIdle(ctx, ready); err != nil {
				return err
			}
			continue
		}
		if err := t.handleBuffer(ctx, ch, buf); err != nil {
			return err
		}
	}
}

func (t *Task) handleBuffer(ctx context.Context, ch int, buf network.Buffer) error {
	switch buf.Kind {
	case network.Data:
		if err := t.faults.Hit(faults.Process); err != nil {
			return err
		}
		t.ua.lastSeq[ch] = buf.Seq
		if t.ua.rec != nil && t.ua.rec.on[ch] {
			// Recorded before the chain consumes and recycles the batch.
			if err := t.recordData(ctx, ch, buf.Data, buf.Seq); err != nil {
				return err
			}
			if err := t.afterActions(ctx, nil); err != nil {
				return err
			}
		}
		data := buf.Data
		if s, ok := data.(*network.Serialized); ok {
			// From a remote channel: decoded into a batch of the codec's
			// pool, which the chain recycles like a local one.
			var err error
			if data, err = t.decodeRemote(ch, s); err != nil {
				return err
			}
		}
		input := t.chain.input
		if t.chain.byChannel != nil {
			input = t.chain.byChannel[ch]
		}
		n, err := input(ctx, data)
		if err != nil {
			return err
		}
		t.metrics.recordsIn(n)
		if err := t.fireTimers(ctx); err != nil {
			return err
		}
		if err := t.maybeEmitPeriodic(ctx); err != nil {
			return err
		}
		return t.maybeFlush(ctx)
	case network.Watermark, network.WatermarkStatus:
		return t.onWatermark(ctx, ch, buf)
	case network.Barrier:
		t.noteBarrier(buf.Barrier.ID)
		return t.perform(ctx, &polled{ch, buf}, t.ckpt.handler.Step(barrier.BarrierArrived{Channel: ch, Barrier: buf.Barrier, Priority: buf.Priority}))
	case network.Announcement:
		t.noteBarrier(buf.Barrier.ID)
		return t.perform(ctx, nil, t.ckpt.handler.Step(barrier.BarrierAnnounced{Channel: ch, Barrier: buf.Barrier}))
	case network.CancelBarrier:
		return t.perform(ctx, nil, t.ckpt.handler.Step(barrier.CancelArrived{Channel: ch, ID: buf.Cancel}))
	case network.EndOfData:
		last, err := t.end.arrived(ch)
		if err != nil || !last {
			return err
		}
		return t.endInput(ctx)
	case network.EndOfPartition:
		return t.perform(ctx, &polled{ch, buf}, t.ckpt.handler.Step(barrier.EndOfPartition{Channel: ch}))
	}
	return fmt.Errorf("channel %d: unknown buffer kind %d", ch, buf.Kind)
}

// polled is a buffer from the gate whose handler actions are being
// performed: a StopRecording on its channel needs the priority barrier's
// Seq to record the data it overtook.
type polled struct {
	ch  int
	buf network.Buffer
}

// perform carries out the barrier handler's actions; cur is the buffer they
// answer, nil when they come from mail, a timer or a recording abort.
func (t *Task) perform(ctx context.Context, cur *polled, actions []barrier.Action) error {
	for _, a := range actions {
		if ok, err := t.performRecording(ctx, cur, a); ok {
			if err != nil {
				return err
			}
			continue
		}
		switch a := a.(type) {
		case barrier.Block:
			t.gate.Block(a.Channel)
		case barrier.UnblockAll:
			t.gate.UnblockAll()
		case barrier.Snapshot:
			if err := t.snapshot(ctx, a.Barrier, a.Unaligned); err != nil {
				return err
			}
		case barrier.Abort:
			t.gw.Decline(t.ID, a.ID, a.Reason, false)
			if t.ua.rec != nil && t.ua.rec.id == a.ID {
				t.ua.rec.abort()
				t.ua.rec = nil
			}
			for _, w := range t.chain.writers {
				// In unaligned mode the cancel marker overtakes queued data,
				// so downstream tasks stop recording early.
				var err error
				cancel := network.Buffer{Kind: network.CancelBarrier, Cancel: a.ID}
				if t.ua.enabled {
					err = w.BroadcastPriority(cancel)
				} else {
					err = w.Broadcast(ctx, cancel)
				}
				if err != nil {
					return fmt.Errorf("forward cancel of checkpoint %d: %w", a.ID, err)
				}
			}
		case barrier.EndOfInput:
			// All partitions ended for good. Tasks finish through the final
			// checkpoint, so this only happens when upstream tasks stopped
			// without one; nothing to do until the cluster mode needs it.
		default:
			return fmt.Errorf("unknown barrier handler action %T", a)
		}
	}
	return t.afterActions(ctx, cur)
}

// decodeRemote decodes a batch that arrived on remote channel ch with the
// edge's codec and releases its buffer. A batch that does not decode
// exactly fails the task: the producer runs the same build, so this is
// corruption.
func (t *Task) decodeRemote(ch int, s *network.Serialized) (any, error) {
	defer s.Release()
	if ch >= len(t.ua.chans) {
		return nil, fmt.Errorf("channel %d: an encoded batch, but the task has no codec for it", ch)
	}
	data, n, err := t.ua.chans[ch].codec.DecodeBatch(s.Bytes)
	if err != nil {
		return nil, fmt.Errorf("decode a batch from remote channel %d: %w", ch, err)
	}
	if n != len(s.Bytes) || t.ua.chans[ch].codec.Records(data) != s.Records {
		recycle(data)
		return nil, fmt.Errorf("decode a batch from remote channel %d: %d of %d bytes hold %d records, the frame says %d: %w", ch, n, len(s.Bytes), t.ua.chans[ch].codec.Records(data), s.Records, codec.ErrCorrupt)
	}
	return data, nil
}

// recycle returns a decoded batch to its pool.
func recycle(data any) {
	if r, ok := data.(interface{ Recycle() }); ok {
		r.Recycle()
	}
}
