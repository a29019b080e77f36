package network

import "github.com/weirstream/weir/internal/checkpoint"

// The priority section of a gate holds events that overtake the data and
// ordinary events queued on their channel: barriers of unaligned
// checkpoints (Channel.SendPriority, Gate.Prioritize), their cancel markers,
// and announcements (WithAnnouncements). It is one FIFO for the whole gate,
// so priority events keep their order among themselves, and Poll serves it
// before any channel, blocked or not.
//
// An overtaking event keeps the Seq of its logical position in its channel.
// Which records it overtook is then a question about the channel's queue,
// answered by AppendOvertaken when the consumer needs it (to record them as
// channel state), instead of moving data around when the event arrives.

// prioItem is one buffer of the priority section and its channel.
type prioItem struct {
	ch int
	b  Buffer
}

// PriorityReady returns a channel that holds a value while the priority
// section is non-empty. A task that must not poll data (it waits for its
// output debt to be repaid) selects on it and calls PollPriority. The
// protocol is Ready's: a receive consumes the value, each PollPriority that
// leaves more puts it back, and a wake-up may be spurious (Poll served the
// section meanwhile).
func (g *Gate) PriorityReady() <-chan struct{} { return g.prioReady }

// PollPriority is Poll restricted to the priority section: it never returns
// data and never takes a buffer from a channel's queue.
func (g *Gate) PollPriority() (ch int, b Buffer, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.prio.len() == 0 {
		return -1, Buffer{}, false
	}
	ch, b = g.popPriorityLocked()
	g.armLocked()
	return ch, b, true
}

// pushPriorityLocked appends b of channel c to the priority section and
// raises both wake-up values.
func (g *Gate) pushPriorityLocked(c *Channel, b Buffer) {
	g.prio.push(prioItem{ch: c.index, b: b})
	c.prioQueued++
	select {
	case g.prioReady <- struct{}{}:
	default:
	}
	g.armLocked()
}

// popPriorityLocked takes the oldest priority buffer; the section must not
// be empty. PriorityReady is kept equal to "non-empty": re-raised while
// something is left, drained when nothing is, so a task waiting on it does
// not wake for nothing after Poll served the section.
func (g *Gate) popPriorityLocked() (int, Buffer) {
	it := g.prio.pop()
	g.chans[it.ch].prioQueued--
	it.b.Priority = true
	if g.prio.len() > 0 {
		select {
		case g.prioReady <- struct{}{}:
		default:
		}
	} else {
		select {
		case <-g.prioReady:
		default:
		}
	}
	return it.ch, it.b
}

// AppendOvertaken appends to dst the payloads (Buffer.Data) of the Data
// buffers queued on channel ch with Seq <= seq, oldest first, and returns
// the extended slice. They stay queued: Poll still returns them later, in
// order, and they keep their credits.
//
// This is what a priority barrier polled from ch with Seq seq overtook, the
// channel's in-flight data of an unaligned checkpoint. Reading the payloads
// after the lock is released is safe: a queued batch is immutable, since the
// producer gave it up at Send and only the consumer, the caller, ever polls
// it. The caller must not recycle them; it gets them again from Poll.
func (g *Gate) AppendOvertaken(dst []any, ch int, seq uint64) []any {
	g.mu.Lock()
	defer g.mu.Unlock()
	q := &g.chans[ch].queue
	for i := range q.len() {
		b := q.at(i)
		if b.Kind != Data {
			continue
		}
		if b.Seq > seq {
			break // Data Seqs increase along the queue
		}
		dst = append(dst, b.Data)
	}
	return dst
}

// Prioritize turns the barriers of checkpoint id into priority events: each
// one queued on a channel moves, with its Seq, to the end of the priority
// section (channels in index order), and barriers of id sent later go there
// directly. A barrier handler calls it when it decides to take id unaligned
// (an alignment timeout), so the barriers still stuck behind backlog reach
// it at once. It replaces the id of an earlier call. O(queued buffers): a
// cold path.
func (g *Gate) Prioritize(id checkpoint.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.promote, g.promoting = id, true
	isBarrier := func(b Buffer) bool { return b.Kind == Barrier && b.Barrier.ID == id }
	for _, c := range g.chans {
		for {
			b, ok := c.queue.takeFirst(isBarrier)
			if !ok {
				break
			}
			g.pushPriorityLocked(c, b)
		}
		if c.listed && c.queue.len() == 0 {
			// Poll expects a queued buffer behind every listed channel.
			g.avail.removeFirst(func(i int) bool { return i == c.index })
			c.listed = false
		}
	}
}
