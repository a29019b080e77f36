package network

import "sync/atomic"

// Debt counts the output channels of one task that hold more Data buffers
// than their receivers granted credits for: channels a writer made
// WithOverdraft sent into without waiting.
//
// The point of overdrawing is that a task never waits for credit in the
// middle of a batch, where it could neither take a checkpoint trigger nor
// handle a priority barrier (its half-processed input lives in stack
// frames). It finishes the batch by overdrawing, and before it starts the
// next one it waits until the debt is repaid, handling mail and priority
// events meanwhile:
//
//	for debt.InDebt() {
//		select {
//		case <-debt.Ready():   // re-check InDebt
//		case <-mailbox:        // triggers, cancels
//		case <-gate.PriorityReady():
//			gate.PollPriority() ...
//		case <-ctx.Done():
//		}
//	}
//
// A channel is in debt from the Send that takes its credits from 0 to -1
// until the Poll that brings them back to 0; each such channel counts once.
// One Debt is shared by all writers of a task; it is safe for concurrent
// use (consumers repay from their own goroutines).
type Debt struct {
	n     atomic.Int64
	ready chan struct{} // cap 1; see Ready
}

// NewDebt returns a Debt of zero.
func NewDebt() *Debt { return &Debt{ready: make(chan struct{}, 1)} }

// InDebt reports whether any channel of the task is overdrawn. It is one
// atomic load, cheap enough to call before every batch.
func (d *Debt) InDebt() bool { return d.n.Load() > 0 }

// Ready returns a channel that receives a value when the debt drops to
// zero. The value may be stale (the task got into debt again since), so a
// receiver re-checks InDebt; it is never lost, because the count drops
// before the value is sent.
func (d *Debt) Ready() <-chan struct{} { return d.ready }

// Charge records a channel going into debt (its credits from 0 to -1). The
// channels of this package call it; a Sender of another package (a remote
// channel) calls it from its SendOverdraft, exactly once per such step.
func (d *Debt) Charge() { d.n.Add(1) }

// Repay records a channel leaving debt (its credits back from -1 to 0),
// exactly once per Charge, and signals Ready at zero.
func (d *Debt) Repay() {
	if d.n.Add(-1) == 0 {
		select {
		case d.ready <- struct{}{}:
		default:
		}
	}
}
