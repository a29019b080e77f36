package network

import (
	"fmt"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Gate is the input side of a task: one queue per input channel, polled by
// the task's own goroutine, plus one priority section shared by all
// channels for events that overtake queued data (priority.go). Producers
// call Channel.Send and Channel.SendPriority concurrently; Poll,
// PollPriority, Block, Unblock, UnblockAll, Prioritize and AppendOvertaken
// are meant for the single consumer.
type Gate struct {
	ready     chan struct{} // cap 1; see Ready
	prioReady chan struct{} // cap 1; see PriorityReady
	chans     []*Channel
	credits   int  // per channel, as granted at creation
	announce  bool // WithAnnouncements

	mu sync.Mutex
	// avail lists the unblocked channels with queued buffers in round-robin
	// order; a channel appears at most once (Channel.listed).
	avail ring[int]
	// prio is the priority section, served before avail and regardless of
	// Block.
	prio ring[prioItem]
	// promote is the checkpoint whose barriers go straight into prio, once
	// promoting is set by Prioritize.
	promote   checkpoint.ID
	promoting bool
}

// GateOption configures a Gate at NewGate.
type GateOption func(*Gate)

// WithAnnouncements makes the gate announce every ordinary Barrier sent to
// it: the barrier stays in its channel's FIFO order, and an Announcement
// carrying it (same Seq) goes into the priority section. An alternating
// aligned/unaligned barrier handler starts its alignment timer on the
// announcement, so the timer runs even when every barrier is stuck behind
// backlog (the announcement is Flink's EventAnnouncement).
func WithAnnouncements() GateOption { return func(g *Gate) { g.announce = true } }

// NewGate returns a gate over numChannels channels, each of which grants its
// producer creditsPerChannel credits: at most that many Data buffers are
// queued per channel, plus what producers overdraw (Writer WithOverdraft).
// It panics on values below 1, which validated configuration never
// produces.
func NewGate(numChannels, creditsPerChannel int, opts ...GateOption) *Gate {
	if numChannels < 1 {
		panic(fmt.Sprintf("network: gate with %d channels: need at least 1", numChannels))
	}
	if creditsPerChannel < 1 {
		panic(fmt.Sprintf("network: %d credits per channel: need at least 1, or no data could ever be sent", creditsPerChannel))
	}
	g := &Gate{
		ready:     make(chan struct{}, 1),
		prioReady: make(chan struct{}, 1),
		chans:     make([]*Channel, numChannels),
		credits:   creditsPerChannel,
		avail:     newRing[int](numChannels),
		// One checkpoint in flight puts at most a barrier, an announcement
		// and a cancel marker per channel here; it grows if needed.
		prio: newRing[prioItem](2 * numChannels),
	}
	for _, o := range opts {
		o(g)
	}
	for i := range g.chans {
		g.chans[i] = &Channel{
			gate:    g,
			index:   i,
			wake:    make(chan struct{}, 1),
			queue:   newRing[Buffer](creditsPerChannel + 4), // room for a few events without growing
			credits: creditsPerChannel,
		}
	}
	return g
}

// CreditsPerChannel is the credits each channel granted at creation: what a
// remote input channel grants its producer over the wire.
func (g *Gate) CreditsPerChannel() int { return g.credits }

// NumChannels is the number of input channels.
func (g *Gate) NumChannels() int { return len(g.chans) }

// Channel returns the producer end of channel i.
func (g *Gate) Channel(i int) *Channel { return g.chans[i] }

// Ready returns a channel that holds a value whenever Poll may return a
// buffer. The protocol for the task loop:
//
//   - select on Ready() together with the mailbox and ctx.Done();
//   - receiving the value consumes it, so after a receive call Poll at least
//     once. Each Poll that leaves more to poll puts the value back, so the
//     loop may handle some buffers and return to its select without losing a
//     wake-up; polling until ok is false is the simplest;
//   - a wake-up can be spurious (Poll returns ok == false), e.g. after Block;
//     just select again.
//
// Every Send, SendPriority, Unblock and Poll that leaves a pollable buffer
// sets the value, so there is no lost wake-up.
func (g *Gate) Ready() <-chan struct{} { return g.ready }

// Poll returns the next buffer without blocking. The priority section comes
// first, in FIFO order and also for blocked channels, with b.Priority set.
// Otherwise the buffer comes from the unblocked channel whose turn it is,
// one buffer per turn, so busy channels cannot starve the others. ok is
// false when nothing is pollable. Polling a Data buffer returns its credit
// to the producer; the caller then owns the batch.
func (g *Gate) Poll() (ch int, b Buffer, ok bool) {
	g.mu.Lock()
	if g.prio.len() > 0 {
		ch, b = g.popPriorityLocked()
		g.armLocked()
		g.mu.Unlock()
		return ch, b, true
	}
	if g.avail.len() == 0 {
		g.mu.Unlock()
		return -1, Buffer{}, false
	}
	ch = g.avail.pop()
	c := g.chans[ch]
	b = c.queue.pop()
	var onCredit func(int)
	if b.Kind == Data {
		c.queuedData--
		c.credits++
		if c.credits == 0 && c.debt != nil {
			c.debt.Repay()
			c.debt = nil
		}
		c.passWakeLocked()
		onCredit = c.onCredit
	}
	if c.queue.len() > 0 {
		g.avail.push(ch) // to the back: round robin
	} else {
		c.listed = false
	}
	g.armLocked()
	g.mu.Unlock()
	if onCredit != nil {
		// Outside the lock: the listener takes its connection's locks, and
		// nothing of the gate may be held while it does.
		onCredit(1)
	}
	return ch, b, true
}

// SetCreditListener makes every Poll of a Data buffer from channel ch call
// f(1) after the gate's lock is released: the credit the poll returned. A
// remote input channel uses it to send the credit back to its producer
// (AddCredit); a local channel needs none, its producer sees the credit in
// the shared count. A blocked channel is not polled, so it returns no
// credit, and its remote producer stops once its credits are used up, as a
// local one does. Set it before the channel carries data; f must not call
// back into the gate.
func (g *Gate) SetCreditListener(ch int, f func(n int)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.chans[ch].onCredit = f
}

// SwapCreditListener sets channel ch's credit listener, like
// SetCreditListener, if fewer than below Data buffers are queued on it,
// and returns how many are: polls after the swap call f for exactly those
// (and later ones), polls before it called the old listener. A remote
// input that replaces an earlier one on the same channel takes over its
// queued buffers' credit this way.
func (g *Gate) SwapCreditListener(ch int, f func(n int), below int) (queued int, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.chans[ch]
	if c.queuedData >= below {
		return c.queuedData, false
	}
	c.onCredit = f
	return c.queuedData, true
}

// Block stops polling channel ch, for barrier alignment. Its queued buffers
// keep their credits, so its producer stalls once it used them up (and its
// overdraft) and the task needs no buffer of its own. Its priority events
// are still polled. Blocking a blocked channel is a no-op.
func (g *Gate) Block(ch int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.chans[ch]
	if c.blocked {
		return
	}
	c.blocked = true
	if c.listed {
		g.avail.removeFirst(func(i int) bool { return i == ch })
		c.listed = false
	}
}

// Unblock resumes polling channel ch where it stopped, in order, with nothing
// lost or repeated. Unblocking an unblocked channel is a no-op.
func (g *Gate) Unblock(ch int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unblockLocked(g.chans[ch])
}

// UnblockAll unblocks every blocked channel, in channel order.
func (g *Gate) UnblockAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.chans {
		g.unblockLocked(c)
	}
}

func (g *Gate) unblockLocked(c *Channel) {
	if !c.blocked {
		return
	}
	c.blocked = false
	g.listLocked(c)
}

// listLocked puts c into the round-robin list if it is pollable and not
// listed yet, and raises Ready.
func (g *Gate) listLocked(c *Channel) {
	if !c.listed && !c.blocked && c.queue.len() > 0 {
		c.listed = true
		g.avail.push(c.index)
	}
	g.armLocked()
}

// armLocked sets the Ready value if something is pollable. A non-blocking
// send on a full channel is a cheap check, and this runs once per buffer.
func (g *Gate) armLocked() {
	if g.avail.len() > 0 || g.prio.len() > 0 {
		select {
		case g.ready <- struct{}{}:
		default:
		}
	}
}
