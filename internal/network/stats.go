package network

// GateStats is a snapshot of a gate for metrics and debugging.
type GateStats struct {
	// CreditsPerChannel is what each channel granted at creation.
	CreditsPerChannel int
	// Channels holds one entry per input channel, by index.
	Channels []ChannelStats
}

// ChannelStats is a snapshot of one input channel.
type ChannelStats struct {
	// QueuedData and QueuedEvents count buffers sent and not yet polled,
	// in the channel's FIFO queue.
	QueuedData, QueuedEvents int
	// PriorityQueued counts the channel's buffers in the gate's priority
	// section: priority barriers and cancel markers, announcements.
	PriorityQueued int
	// Credits is the number of Data buffers the producer may still send
	// without waiting or overdrawing; Credits + QueuedData ==
	// CreditsPerChannel. It is negative while the producer is overdrawn.
	Credits int
	// Overdraft is the number of queued Data buffers beyond the granted
	// credits (-Credits when Credits < 0, else 0): what a writer sent
	// WithOverdraft, or flushed ahead of an event, without waiting.
	Overdraft int
	// Blocked is set between Block and Unblock.
	Blocked bool
	// Finished is set once EndOfPartition was sent.
	Finished bool
	// Waiting is the number of Sends blocked for a credit right now.
	Waiting int
	// BackpressureWaits counts Sends that found no credit and had to wait:
	// the producer was backpressured.
	BackpressureWaits uint64
	// SentData and SentEvents count buffers accepted by Send (and
	// SendPriority); gate-made announcements are not counted.
	SentData, SentEvents uint64
}

// Backpressured reports whether the producer is currently out of credits.
func (s ChannelStats) Backpressured() bool { return s.Credits <= 0 }

// Stats returns a snapshot of every channel of the gate.
func (g *Gate) Stats() GateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := GateStats{CreditsPerChannel: g.credits, Channels: make([]ChannelStats, len(g.chans))}
	for i, c := range g.chans {
		s.Channels[i] = ChannelStats{
			QueuedData:        c.queuedData,
			QueuedEvents:      c.queue.len() - c.queuedData,
			PriorityQueued:    c.prioQueued,
			Credits:           c.credits,
			Overdraft:         max(0, -c.credits),
			Blocked:           c.blocked,
			Finished:          c.finished,
			Waiting:           c.waiters,
			BackpressureWaits: c.waits,
			SentData:          c.sentData,
			SentEvents:        c.sentEvents,
		}
	}
	return s
}
