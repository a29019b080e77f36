package runtime

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint/barrier"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/network"
)

// runInput is the loop of a task with inputs. Each iteration handles pending
// control messages, then one buffer from the gate: a batch of records goes
// through the chain; a barrier, cancel marker or end of data goes to the
// barrier handler, whose actions the task performs.
func (t *Task) runInput(ctx context.Context) error {
	ready := t.gate.Ready()
	for {
		if t.mail.pending() {
			if err := t.handleMail(ctx); err != nil {
				return err
			}
		}
		if t.finished {
			return nil
		}
		ch, buf, ok := t.gate.Poll()
		if !ok {
			if err := t.fireTimers(ctx); err != nil {
				return err
			}
			if err := t.maybeFlush(ctx); err != nil {
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
		n, err := t.input(ctx, buf.Data)
		if err != nil {
			return err
		}
		t.metrics.recordsIn(n)
		if err := t.fireTimers(ctx); err != nil {
			return err
		}
		return t.maybeFlush(ctx)
	case network.Barrier:
		return t.perform(ctx, t.handler.Step(barrier.BarrierArrived{Channel: ch, Barrier: buf.Barrier}))
	case network.CancelBarrier:
		return t.perform(ctx, t.handler.Step(barrier.CancelArrived{Channel: ch, ID: buf.Cancel}))
	case network.EndOfData:
		if t.eod[ch] {
			return fmt.Errorf("channel %d delivered end of data twice", ch)
		}
		t.eod[ch] = true
		t.eodCount++
		if t.eodCount == len(t.eod) {
			return t.endInput(ctx)
		}
		return nil
	case network.EndOfPartition:
		return t.perform(ctx, t.handler.Step(barrier.EndOfPartition{Channel: ch}))
	}
	return fmt.Errorf("channel %d: unknown buffer kind %d", ch, buf.Kind)
}

// perform carries out the barrier handler's actions.
func (t *Task) perform(ctx context.Context, actions []barrier.Action) error {
	for _, a := range actions {
		switch a := a.(type) {
		case barrier.Block:
			t.gate.Block(a.Channel)
		case barrier.UnblockAll:
			t.gate.UnblockAll()
		case barrier.Snapshot:
			if err := t.snapshot(ctx, a.Barrier); err != nil {
				return err
			}
		case barrier.Abort:
			t.gw.Decline(t.ID, a.ID, a.Reason)
			for _, w := range t.writers {
				if err := w.Broadcast(ctx, network.Buffer{Kind: network.CancelBarrier, Cancel: a.ID}); err != nil {
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
	return nil
}
