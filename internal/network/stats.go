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
	// QueuedData and QueuedEvents count buffers sent and not yet polled.
	QueuedData, QueuedEvents int
	// Credits is the number of Data buffers the producer may still send
	// without waiting; Credits + QueuedData == CreditsPerChannel.
	Credits int
	// Blocked is set between Block and Unblock.
	Blocked bool
	// Finished is set once EndOfPartition was sent.
	Finished bool
	// Waiting is the number of Sends blocked for a credit right now.
	Waiting int
	// BackpressureWaits counts Sends that found no credit and had to wait:
	// the producer was backpressured.
	BackpressureWaits uint64
	// SentData and SentEvents count buffers accepted by Send.
	SentData, SentEvents uint64
}

// Backpressured reports whether the producer is currently out of credits.
func (s ChannelStats) Backpressured() bool { return s.Credits == 0 }

// Stats returns a snapshot of every channel of the gate.
func (g *Gate) Stats() GateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := GateStats{CreditsPerChannel: g.credits, Channels: make([]ChannelStats, len(g.chans))}
	for i, c := range g.chans {
		s.Channels[i] = ChannelStats{
			QueuedData:        c.queuedData,
			QueuedEvents:      c.queue.len() - c.queuedData,
			Credits:           c.credits,
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
