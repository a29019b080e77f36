package network

import (
	"context"
	"fmt"
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
	queue      ring[Buffer]
	credits    int // credits granted by the receiver and not yet used: free Data slots
	queuedData int
	blocked    bool // Block was called: Poll skips this channel
	listed     bool // the channel's index is in gate.avail
	finished   bool // EndOfPartition was sent
	waiters    int  // Sends waiting for a credit
	waits      uint64
	sentData   uint64
	sentEvents uint64
}

// Index is the channel's position in its gate.
func (c *Channel) Index() int { return c.index }

// Send queues b behind everything sent before it on this channel.
//
// A Data buffer takes one credit. If the channel has none, Send blocks until
// the receiver polls one of the queued Data buffers (backpressure) or ctx is
// done, in which case it returns an error wrapping ctx.Err() and b is not
// queued; ownership of b.Data stays with the caller. Send does not look at
// ctx when it need not wait.
//
// Events (Barrier, CancelBarrier, EndOfPartition) take no credit and never
// wait. Nothing may be sent after EndOfPartition.
func (c *Channel) Send(ctx context.Context, b Buffer) error {
	g := c.gate
	g.mu.Lock()
	if c.finished {
		g.mu.Unlock()
		return fmt.Errorf("send %s to channel %d: channel already ended with end of partition; send nothing after it", b.Kind, c.index)
	}
	if b.Kind.IsEvent() {
		c.queue.push(b)
		c.sentEvents++
		if b.Kind == EndOfPartition {
			c.finished = true
		}
		g.listLocked(c)
		g.mu.Unlock()
		return nil
	}
	if c.credits == 0 {
		c.waits++
		for c.credits == 0 {
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
		}
	}
	c.credits--
	c.passWakeLocked()
	c.queue.push(b)
	c.queuedData++
	c.sentData++
	g.listLocked(c)
	g.mu.Unlock()
	return nil
}

// passWakeLocked wakes another waiting sender if a credit is free. Without
// it, two senders on one channel could lose a wake-up: credits go 0->1
// (signal), 1->2 (the cap-1 wake channel is full, no signal), sender A takes
// the signal and one credit, and sender B sleeps although a credit is free.
func (c *Channel) passWakeLocked() {
	if c.credits > 0 && c.waiters > 0 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}
