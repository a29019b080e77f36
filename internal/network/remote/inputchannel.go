package remote

import (
	"errors"
	"fmt"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/credit"
	"github.com/weirstream/weir/internal/network/wire"
)

// InputChannel is the consumer's end of a remote channel: it subscribes
// one channel of the consumer task's Gate to a producer on the peer with a
// PartitionRequest granting the gate's credits per channel, and the
// connection's reader puts what arrives into that gate channel: Data as a
// *network.Serialized from the channel's receive pool (the task decodes
// it with the edge's codec and calls Release), events as Buffers, priority
// events with the producer's Seq (Channel.DeliverPriority). Every Poll of
// its Data returns a credit, which goes back to the producer as an
// AddCredit, coalesced when the writer is busy; a blocked channel is not
// polled and returns none, so its producer stops, as locally.
//
// Sequence numbers are checked: a gap fails this channel (and cancels the
// partition), Data beyond the granted credit closes the connection. When
// the channel fails for any reason but Close, the OnFailure callback runs
// once with the error, so the task can fail (Task.Fail).
type InputChannel struct {
	conn   *Conn
	id     uint32
	ch     *network.Channel
	pool   *network.SerializedPool
	desc   string
	onFail func(error)
	done   chan struct{}

	mu         sync.Mutex
	ledger     *credit.Receiver
	announcing bool // on the connection's credit list
	finished   bool // end of partition delivered
	err        error
	// pos is the log position of the last buffer delivered (a Weak
	// input's; From before any), drain whether frames are dropped
	// instead (InputConfig.Drain).
	pos   wire.LogPos
	drain bool
	// held back: a Reopen's freed credit is not announced until the first
	// frame arrived (the producer has bound the channel then; an AddCredit
	// before that would be dropped as for an unknown channel).
	heldBack bool
}

// InputConfig says which partition an InputChannel subscribes to and where
// its buffers go.
type InputConfig struct {
	// Job, Producer, Attempt, Edge and Consumer name the partition: the
	// producer execution's output edge towards this consumer subtask.
	// With Weak, Attempt is this consumer's own attempt instead: the
	// producer makes a channel per consumer attempt, and a newer one
	// supersedes an older.
	Key     PartitionKey
	Attempt int
	// Gate and Channel are the consumer's gate and the channel index this
	// input fills.
	Gate    *network.Gate
	Channel int
	// OnFailure is called once, from a connection goroutine, when the
	// channel fails (not after Close or end of partition). It must not
	// block; the runtime mails the task.
	OnFailure func(error)
	// Weak subscribes to a WEAKLY_CONSISTENT producer's in-flight log: the
	// producer's WeakHandler makes the channel, replaying from From (the
	// log position the consumer's snapshot read up to; zero for a
	// consumer starting afresh), and what arrives carries its log
	// position (network.Buffer.LogBuffers, LogRecords). From must be zero
	// without Weak.
	Weak bool
	From wire.LogPos
	// Reopen replaces an earlier Weak input of the same gate channel (its
	// producer moved to another TaskManager): the Data buffers the gate
	// channel still holds from it keep their credit, which the new
	// channel grants its producer as the task polls them.
	Reopen bool
	// Drain, with Weak, subscribes an input whose channel ended already
	// (its end of partition was delivered) to a producer's new attempt
	// only so that the producer's log learns the position: whatever
	// arrives is dropped, and the channel closes at its end of partition.
	Drain bool
}

// OpenInput subscribes a gate channel to a partition produced on the
// connection's peer. It fails if the connection has failed.
func (c *Conn) OpenInput(cfg InputConfig) (*InputChannel, error) {
	if !cfg.Weak && !cfg.From.IsZero() {
		return nil, fmt.Errorf("open remote channel %s from %s: replay position %d/%d without Weak: only a WEAKLY_CONSISTENT input replays", cfg.Key, c.peer, cfg.From.Buffers, cfg.From.Records)
	}
	if (cfg.Reopen || cfg.Drain) && !cfg.Weak {
		return nil, fmt.Errorf("open remote channel %s from %s: Reopen or Drain without Weak: only a WEAKLY_CONSISTENT input reconnects", cfg.Key, c.peer)
	}
	credits := cfg.Gate.CreditsPerChannel()
	ic := &InputChannel{
		conn:   c,
		ch:     cfg.Gate.Channel(cfg.Channel),
		pool:   network.NewSerializedPool(c.segment),
		desc:   fmt.Sprintf("%s from %s", cfg.Key, c.peer),
		onFail: cfg.OnFailure,
		done:   make(chan struct{}),
		pos:    cfg.From,
		drain:  cfg.Drain,
	}
	held := 0
	switch {
	case cfg.Drain:
		// Nothing reaches the gate channel: every frame is dropped.
		ic.ledger = credit.NewReceiver(credits)
	case cfg.Reopen:
		ic.mu.Lock() // freed may run once the listener is set
		var ok bool
		if held, ok = cfg.Gate.SwapCreditListener(cfg.Channel, ic.freed, credits); !ok {
			ic.mu.Unlock()
			return nil, fmt.Errorf("open remote channel %s from %s: %d buffers of %d credits: %w", cfg.Key, c.peer, held, credits, ErrGateFull)
		}
		ic.ledger = credit.NewReceiverHeld(credits, held)
		ic.heldBack = true
		ic.mu.Unlock()
	default:
		ic.ledger = credit.NewReceiver(credits)
		cfg.Gate.SetCreditListener(cfg.Channel, ic.freed)
	}
	req := wire.PartitionRequestMsg{
		Job: cfg.Key.Job, Producer: cfg.Key.Producer, Attempt: cfg.Attempt,
		Edge: cfg.Key.Edge, Consumer: cfg.Key.Consumer,
		Credit: credits, BufferSize: c.segment,
		Weak: cfg.Weak, From: cfg.From, Held: held,
	}
	if err := c.addInput(ic, req); err != nil {
		return nil, fmt.Errorf("open remote channel %s: %w", ic.desc, err)
	}
	return ic, nil
}

// Err returns why the channel failed or was closed, or nil.
func (ic *InputChannel) Err() error {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return ic.err
}

// Done is closed when the channel failed, or was closed before its end of
// partition arrived.
func (ic *InputChannel) Done() <-chan struct{} { return ic.done }

// InStats is a snapshot of an InputChannel for metrics.
type InStats struct {
	// Held is the Data buffers delivered and not yet polled; Backlog the
	// producer's last announced backlog; Want the floating credits it
	// would justify (not granted in version 1).
	Held, Backlog, Want int
	// BuffersAllocated is the receive pool's size.
	BuffersAllocated int
}

// Stats returns a snapshot.
func (ic *InputChannel) Stats() InStats {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return InStats{Held: ic.ledger.Held(), Backlog: ic.ledger.Backlog(), Want: ic.ledger.Want(ic.ledger.Backlog()), BuffersAllocated: ic.pool.Allocated()}
}

// Close unsubscribes: a channel that has not ended tells its producer
// (CancelPartition), and frames still arriving are dropped. OnFailure is
// not called.
func (ic *InputChannel) Close() {
	ic.fail(fmt.Errorf("remote channel %s: %w", ic.desc, ErrClosed), true)
}

// Prioritize asks the producer to send the barrier of checkpoint id ahead
// of the data queued before it: the consumer's alignment timed out
// (network.Gate.Prioritize covers what already arrived). The barrier then
// arrives as a priority event with its Seq, and the data it overtook still
// follows on the stream. A channel that ended or failed sends nothing.
func (ic *InputChannel) Prioritize(id checkpoint.ID) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.err != nil || ic.finished || id < 1 {
		return
	}
	ic.conn.queueCtrl(func(b []byte) []byte { return wire.AppendPrioritize(b, ic.id, id) })
}

// Position returns the log position of the last buffer delivered (a Weak
// input's; its From before any) and whether its end of partition was: what
// a reconnect to its producer's new attempt asks to follow.
func (ic *InputChannel) Position() (pos wire.LogPos, ended bool) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	// A drained input stands for a channel that ended already.
	return ic.pos, ic.finished || ic.drain
}

// Release tells a WEAKLY_CONSISTENT producer that this consumer's
// completed snapshot covers its in-flight log up to p, so it may drop that
// part (OutChannelConfig.OnRelease). It queues a Release frame and never
// blocks; after the channel ended, failed or was closed it does nothing.
func (ic *InputChannel) Release(p wire.LogPos) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.err != nil || ic.finished {
		return
	}
	ic.conn.queueCtrl(func(b []byte) []byte { return wire.AppendRelease(b, ic.id, p) })
}

// freed is the gate's credit listener: n polled Data buffers free n
// credits.
func (ic *InputChannel) freed(n int) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.err != nil {
		return
	}
	for range n {
		ic.ledger.Freed()
	}
	if !ic.announcing && !ic.finished {
		ic.announcing = true
		ic.conn.scheduleAnnounce(ic)
	}
}

// takeAnnounce returns the credits to send now, for the writer.
func (ic *InputChannel) takeAnnounce() int {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	ic.announcing = false
	if ic.err != nil || ic.finished || ic.heldBack {
		return 0
	}
	return ic.ledger.Announce()
}

// boundLocked notes a frame's arrival (mu held): a Reopen's held-back
// credit is announced now.
func (ic *InputChannel) boundLocked() {
	if !ic.heldBack {
		return
	}
	ic.heldBack = false
	if ic.ledger.Unannounced() > 0 && !ic.announcing && !ic.finished {
		ic.announcing = true
		ic.conn.scheduleAnnounce(ic)
	}
}

// receiveData delivers a Data frame. An error is a protocol violation that
// closes the connection.
func (ic *InputChannel) receiveData(seq uint64, d wire.DataMsg) error {
	ic.mu.Lock()
	if ic.err != nil {
		ic.mu.Unlock()
		return nil
	}
	if err := ic.ledger.Accept(seq, true, d.Backlog); err != nil {
		return ic.rejectLocked(err)
	}
	ic.boundLocked()
	if ic.drain {
		// The credit comes back at once: nothing is queued.
		ic.ledger.Freed()
		if !ic.announcing {
			ic.announcing = true
			ic.conn.scheduleAnnounce(ic)
		}
		ic.mu.Unlock()
		return nil
	}
	ic.pos = d.Pos
	s := ic.pool.Get(len(d.Bytes))
	s.Bytes = append(s.Bytes, d.Bytes...)
	s.Records = d.Records
	if err := ic.ch.Deliver(network.Buffer{Kind: network.Data, Data: s, LogBuffers: d.Pos.Buffers, LogRecords: d.Pos.Records}); err != nil {
		ic.mu.Unlock()
		s.Release()
		return fmt.Errorf("remote channel %s: %v: %w", ic.desc, err, credit.ErrViolation)
	}
	ic.mu.Unlock()
	return nil
}

// receiveEvent delivers an Event frame.
func (ic *InputChannel) receiveEvent(seq uint64, m wire.EventMsg) error {
	ic.mu.Lock()
	if ic.err != nil {
		ic.mu.Unlock()
		return nil
	}
	if err := ic.ledger.Accept(seq, false, ic.ledger.Backlog()); err != nil {
		return ic.rejectLocked(err)
	}
	ic.boundLocked()
	b := network.Buffer{Kind: m.Kind, Barrier: m.Barrier, Cancel: m.Cancel, Watermark: m.Watermark, Idle: m.Idle,
		LogBuffers: m.Pos.Buffers, LogRecords: m.Pos.Records}
	var err error
	if !ic.drain {
		ic.pos = m.Pos
	}
	if ic.drain {
		// Dropped; the end of partition still ends the channel.
	} else if m.Priority {
		b.Seq = m.Seq
		err = ic.ch.DeliverPriority(b)
	} else {
		err = ic.ch.Deliver(b)
	}
	if err != nil {
		ic.mu.Unlock()
		return fmt.Errorf("remote channel %s: %v: %w", ic.desc, err, credit.ErrViolation)
	}
	if m.Kind == network.EndOfPartition {
		ic.finished = true
		ic.mu.Unlock()
		ic.conn.removeInput(ic, false)
		return nil
	}
	ic.mu.Unlock()
	return nil
}

// rejectLocked handles a ledger error and unlocks: a sequence gap fails
// this channel only; a violation is returned to close the connection.
func (ic *InputChannel) rejectLocked(err error) error {
	ic.mu.Unlock()
	if errors.Is(err, credit.ErrOutOfSequence) {
		ic.fail(fmt.Errorf("remote channel %s: %w", ic.desc, err), true)
		return nil
	}
	return fmt.Errorf("remote channel %s: %w", ic.desc, err)
}

// connFailed fails the channel because its connection failed; a channel
// that already ended is not affected.
func (ic *InputChannel) connFailed(err error) {
	ic.fail(fmt.Errorf("remote channel %s: %w", ic.desc, err), false)
}

// fail ends the channel with err, once. With cancel, the producer is told.
// OnFailure runs unless err is the channel's own Close.
func (ic *InputChannel) fail(err error, cancel bool) {
	ic.mu.Lock()
	if ic.err != nil || ic.finished {
		ic.mu.Unlock()
		return
	}
	ic.err = err
	close(ic.done)
	ic.mu.Unlock()
	ic.conn.removeInput(ic, cancel)
	if ic.onFail != nil && !errors.Is(err, ErrClosed) {
		ic.onFail(err)
	}
}
