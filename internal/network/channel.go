package network

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// Channel is the producer end of one input channel of a Gate. Today it is a
// local, in-process channel; a remote channel will deliver into the same
// gate with the credits it receives over the wire.
//
// Send may be called from several goroutines, but the usual owner is the one
// Writer of the upstream subtask that feeds this channel.
type Channel struct {
	gate  *Gate
	index int
	wake  chan struct{} // cap 1: a credit was returned while someone waited

	// Guarded by gate.mu.
	queue ring[Buffer]
	// credits are the Data slots granted by the receiver and not yet used.
	// They go below zero when a writer overdraws (WithOverdraft, or the
	// flush before an event); credits + queuedData stays the gate's credits
	// per channel.
	credits    int
	queuedData int
	debt       *Debt // charged when credits went 0 -> -1; repaid at -1 -> 0
	waitMax    int   // the largest overdraft any waiting Send allowed itself
	prioQueued int   // buffers of this channel in gate.prio
	blocked    bool  // Block was called: Poll skips this channel
	listed     bool  // the channel's index is in gate.avail
	finished   bool  // EndOfPartition was sent
	waiters    int   // Sends waiting for a credit
	waits      uint64
	waitNanos  atomic.Int64 // time sends waited for credit (BackpressureTime)
	sentData   uint64       // also the Seq of the last Data buffer sent
	sentEvents uint64
	onCredit   func(n int) // Gate.SetCreditListener: called after a Data Poll
	gone       bool        // Abandon was called: the consumer is gone
}

// ErrConsumerGone is returned by a Send to a channel whose consumer was
// abandoned (Channel.Abandon): the buffer was not queued.
var ErrConsumerGone = errors.New("the consumer of this channel is gone")

// Abandon marks the channel's consumer as gone, for good: every Send
// waiting for a credit returns an error wrapping ErrConsumerGone, and so
// does every later Send. WEAKLY_CONSISTENT mode abandons the channels into
// a failed task's gate, so that its producers, which keep running, never
// wait for a consumer that will not poll again.
func (c *Channel) Abandon() {
	g := c.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	c.gone = true
	if c.debt != nil {
		// Nobody will poll the overdrawn buffers back: the producer,
		// which keeps running, must not wait for that repayment.
		c.debt.Repay()
		c.debt = nil
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// noLimit is the overdraft of a send that must not wait: the flush of open
// batches ahead of an event (Writer.Broadcast).
const noLimit = math.MaxInt

// Index is the channel's position in its gate.
func (c *Channel) Index() int { return c.index }

// Send queues b behind everything sent before it on this channel, and stamps
// its Seq (see Buffer.Seq).
//
// A Data buffer takes one credit. If the channel has none, Send blocks until
// the receiver polls one of the queued Data buffers (backpressure) or ctx is
// done, in which case it returns an error wrapping ctx.Err() and b is not
// queued; ownership of b.Data stays with the caller. Send does not look at
// ctx when it need not wait.
//
// Events (Barrier, CancelBarrier, EndOfPartition, EndOfData, Watermark,
// WatermarkStatus) take no credit
// and never wait. Nothing may be sent after EndOfPartition. A Barrier whose
// checkpoint the gate was told to Prioritize goes into the priority section
// instead of the queue.
func (c *Channel) Send(ctx context.Context, b Buffer) error {
	return c.send(ctx, b, 0, nil)
}

// SendOverdraft is Send for a Data buffer that may overdraw up to
// maxOverdraft credits instead of waiting; see Sender and WithOverdraft.
func (c *Channel) SendOverdraft(ctx context.Context, b Buffer, maxOverdraft int, d *Debt) error {
	return c.send(ctx, b, maxOverdraft, d)
}

// BackpressureWaits counts the sends that found no credit and waited, as
// ChannelStats.BackpressureWaits does.
func (c *Channel) BackpressureWaits() uint64 {
	c.gate.mu.Lock()
	defer c.gate.mu.Unlock()
	return c.waits
}

// BackpressureTime is the time sends spent waiting for credit, as
// ChannelStats.BackpressureWaits counts them.
func (c *Channel) BackpressureTime() time.Duration {
	return time.Duration(c.waitNanos.Load())
}

// Deliver is Send for a receiver that must never block: the reader of a
// remote connection, which serves every channel of the connection and would
// stall them all by waiting for one. A Data buffer without credit is refused
// with an error wrapping ErrNoCredit and not queued; the caller keeps
// b.Data. Events are queued as by Send.
func (c *Channel) Deliver(b Buffer) error {
	g := c.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.finished {
		return fmt.Errorf("deliver %s to channel %d: channel already ended with end of partition; the sender sent after it", b.Kind, c.index)
	}
	b.Priority = false
	if b.Kind.IsEvent() {
		c.sendEventLocked(b)
		return nil
	}
	if c.credits <= 0 {
		return fmt.Errorf("deliver data to channel %d: %d buffers queued: %w", c.index, c.queuedData, ErrNoCredit)
	}
	c.credits--
	c.sentData++
	b.Seq = c.sentData
	c.queue.push(b)
	c.queuedData++
	g.listLocked(c)
	return nil
}

// DeliverPriority is SendPriority for an event that overtook data at a
// remote producer: b.Seq is kept as the producer stamped it, the number of
// Data buffers the producer had sent on the channel before the event in
// channel order. Some of them may still be on their way and are delivered
// after b, with Seqs up to b.Seq: a priority barrier's overtaken data are
// then the queued Data with Seq <= b.Seq plus those still arriving with
// such a Seq. A b.Seq below the Data already delivered is an error.
func (c *Channel) DeliverPriority(b Buffer) error {
	if !canOvertake(b.Kind) {
		return fmt.Errorf("priority delivery of %s to channel %d: only barriers, cancel markers and announcements may overtake queued data", b.Kind, c.index)
	}
	g := c.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.finished {
		return fmt.Errorf("priority delivery of %s to channel %d: channel already ended with end of partition; the sender sent after it", b.Kind, c.index)
	}
	if b.Seq < c.sentData {
		return fmt.Errorf("priority delivery of %s to channel %d: seq %d, but %d data buffers were delivered before it", b.Kind, c.index, b.Seq, c.sentData)
	}
	c.sentEvents++
	g.pushPriorityLocked(c, b)
	return nil
}

// send is Send for a Data buffer that may overdraw up to maxOverdraft
// credits (noLimit: never wait). The send that takes the credits from 0 to
// -1 charges d, if not nil, and the poll that brings them back repays it.
func (c *Channel) send(ctx context.Context, b Buffer, maxOverdraft int, d *Debt) error {
	g := c.gate
	g.mu.Lock()
	if c.finished {
		g.mu.Unlock()
		return fmt.Errorf("send %s to channel %d: channel already ended with end of partition; send nothing after it", b.Kind, c.index)
	}
	if c.gone {
		g.mu.Unlock()
		return fmt.Errorf("send %s to channel %d: %w", b.Kind, c.index, ErrConsumerGone)
	}
	b.Priority = false
	if b.Kind.IsEvent() {
		c.sendEventLocked(b)
		g.mu.Unlock()
		return nil
	}
	if c.credits <= -maxOverdraft {
		c.waits++
		c.waitMax = max(c.waitMax, maxOverdraft)
		waitStart := time.Now()
		defer func() { c.waitNanos.Add(int64(time.Since(waitStart))) }()
		for c.credits <= -maxOverdraft {
			if c.gone {
				g.mu.Unlock()
				return fmt.Errorf("send data to channel %d: %w", c.index, ErrConsumerGone)
			}
			c.waiters++
			g.mu.Unlock()
			select {
			case <-c.wake:
			case <-ctx.Done():
				g.mu.Lock()
				c.waiters--
				// A credit signal we may have consumed is not lost: the
				// credit itself is in c.credits, and the remaining waiters
				// are woken below if there is one.
				c.passWakeLocked()
				g.mu.Unlock()
				return fmt.Errorf("send data to channel %d: waiting for a credit (receiver backpressured): %w", c.index, ctx.Err())
			}
			g.mu.Lock()
			c.waiters--
			if c.gone {
				// Pass the wake-up on to any other waiter of the channel.
				select {
				case c.wake <- struct{}{}:
				default:
				}
			}
		}
	}
	if c.gone {
		g.mu.Unlock()
		return fmt.Errorf("send data to channel %d: %w", c.index, ErrConsumerGone)
	}
	c.credits--
	if c.credits == -1 && d != nil {
		c.debt = d
		d.Charge()
	}
	c.passWakeLocked()
	c.sentData++
	b.Seq = c.sentData
	c.queue.push(b)
	c.queuedData++
	g.listLocked(c)
	g.mu.Unlock()
	return nil
}

// sendEventLocked queues the event b: in FIFO order, or in the priority
// section for a barrier the gate promotes. With announcements on, an
// ordinary barrier is also announced in the priority section.
func (c *Channel) sendEventLocked(b Buffer) {
	g := c.gate
	b.Seq = c.sentData
	c.sentEvents++
	if b.Kind == Barrier && g.promoting && b.Barrier.ID == g.promote {
		g.pushPriorityLocked(c, b)
		return
	}
	c.queue.push(b)
	if b.Kind == EndOfPartition {
		c.finished = true
	}
	if b.Kind == Barrier && g.announce {
		g.pushPriorityLocked(c, Buffer{Kind: Announcement, Seq: b.Seq, Barrier: b.Barrier})
	}
	g.listLocked(c)
}

// SendPriority queues the event b in the gate's priority section, behind
// earlier priority events of any channel of the gate: it overtakes the
// channel's queued data and ordinary events, never another priority event.
// b.Seq is stamped as in Send, so it still names b's logical position in
// the channel: the consumer polls it with Priority set, and the data it
// overtook are the queued Data buffers with Seq <= b.Seq
// (Gate.AppendOvertaken). It takes no credit and never waits.
//
// Only barriers, cancel markers and announcements may overtake: data must
// not, an end of data or of partition overtaking records would tell the
// consumer that input ended while records are still queued, and a
// watermark (or a status change) overtaking records would make them late.
func (c *Channel) SendPriority(b Buffer) error {
	if !canOvertake(b.Kind) {
		return fmt.Errorf("priority send of %s to channel %d: only barriers, cancel markers and announcements may overtake queued data; use Send", b.Kind, c.index)
	}
	g := c.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.finished {
		return fmt.Errorf("priority send of %s to channel %d: channel already ended with end of partition; send nothing after it", b.Kind, c.index)
	}
	b.Seq = c.sentData
	c.sentEvents++
	g.pushPriorityLocked(c, b)
	return nil
}

// canOvertake reports whether buffers of kind k may be priority events.
// Watermark and WatermarkStatus may not: they are only true in order with
// the records before them.
func canOvertake(k Kind) bool {
	return k == Barrier || k == CancelBarrier || k == Announcement
}

// passWakeLocked wakes a waiting sender if a credit may be free for it.
// Without it, two senders on one channel could lose a wake-up: credits go
// 0->1 (signal), 1->2 (the cap-1 wake channel is full, no signal), sender A
// takes the signal and one credit, and sender B sleeps although a credit is
// free. Waiting senders of one channel are expected to allow the same
// overdraft (the writers of one task share it); then credits > -waitMax is
// exactly "the woken sender can proceed". With different ones, a sender
// allowing more may sleep until the next poll although it could proceed: a
// delay, never a hang, since the woken sender's queued data gets polled.
func (c *Channel) passWakeLocked() {
	if c.waiters > 0 && c.credits > -c.waitMax {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}
