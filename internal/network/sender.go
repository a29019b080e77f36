package network

import (
	"context"
	"errors"
	"time"
)

// Sender is the producer end of one channel as a Writer sees it. *Channel,
// the local in-process channel, is one; a remote channel to a consumer on
// another TaskManager (remote.OutChannel) is another. The Writer makes one
// interface call per batch or event, never per record.
//
// Implementations keep the Channel's contract: a Data buffer takes a credit
// (a free slot at the consumer) and waits without one; events take none and
// never wait; priority events overtake queued data; after an error the
// caller still owns b.Data.
type Sender interface {
	// Send queues b in order; see Channel.Send.
	Send(ctx context.Context, b Buffer) error
	// SendOverdraft is Send for a Data buffer that may overdraw up to
	// maxOverdraft credits instead of waiting (math.MaxInt: never wait).
	// The send that takes the channel from 0 to -1 credits charges d (if
	// not nil, Debt.Charge), and whoever brings it back to 0 repays it
	// (Debt.Repay); see WithOverdraft.
	SendOverdraft(ctx context.Context, b Buffer, maxOverdraft int, d *Debt) error
	// SendPriority queues the event b ahead of queued data and ordinary
	// events; see Channel.SendPriority.
	SendPriority(b Buffer) error
	// BackpressureWaits counts sends that found no credit and waited.
	BackpressureWaits() uint64
	// BackpressureTime is the time sends spent waiting for credit: the
	// part of a task's backpressured time its writers block inside a
	// send (the rest, waiting for an overdraft to be repaid, the task
	// measures itself).
	BackpressureTime() time.Duration
}

// ErrNoCredit is returned by Channel.Deliver for a Data buffer that finds
// no credit. A remote channel's reader delivers only against credits it
// granted, so for it this means the peer broke the credit protocol.
var ErrNoCredit = errors.New("no credit for data")

var _ Sender = (*Channel)(nil)

// CreditReporter is a Sender that can tell how many credits it holds now:
// Data buffers it may send before it waits (Flink's creditsAvailable
// metric). Both *Channel and the remote channel implement it.
type CreditReporter interface {
	AvailableCredits() int
}

var _ CreditReporter = (*Channel)(nil)

// AvailableCredits returns the channel's credits not yet used; 0 while
// the writer has overdrawn.
func (c *Channel) AvailableCredits() int {
	c.gate.mu.Lock()
	defer c.gate.mu.Unlock()
	return max(c.credits, 0)
}
