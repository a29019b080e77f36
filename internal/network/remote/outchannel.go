package remote

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/credit"
	"github.com/weirstream/weir/internal/network/wire"
)

// BatchEncoder encodes the record batches of one edge; the runtime's
// ChannelCodec (dataflow.ChannelCodec, made by the producing node) is one.
// The wire carries a batch exactly as AppendBatch encodes it, so the
// consumer decodes with the same codec's DecodeBatch, and channel state of
// a remote channel is a byte copy.
type BatchEncoder interface {
	// AppendBatch appends data (a *network.Batch[T]) to dst: a uvarint
	// record count, then the records.
	AppendBatch(dst []byte, data any) []byte
	// Records returns the number of records in data.
	Records(data any) int
}

// recycler is what a *network.Batch[T] is to the OutChannel once encoded.
type recycler interface{ Recycle() }

// OutChannel is a network.Sender for a consumer subtask on another
// TaskManager. The producer task's Writer sends to it as to a local
// channel: Send encodes a Data buffer's batch with the edge's BatchEncoder
// into a buffer from the channel's pool, recycles the batch and queues the
// bytes; the connection's writer sends them against the credits the
// consumer grants, stamping each Data frame with the backlog queued behind
// it.
//
// Backpressure works as locally: at most Credits buffers are queued, and a
// Send beyond them waits (counting a back-pressure wait) or overdraws up to
// the Writer's limit, charging its Debt until the queue drains. Events take
// no credit and queue in order behind data; priority events (SendPriority)
// go ahead of the queued data and ordinary events, carrying the Seq of
// their position in the channel, so the consumer knows which data they
// overtook, including data already on the wire.
//
// An OutChannel starts unbound: it queues until its consumer's partition
// request arrives (PartitionRegistry) and binds it to a connection. It
// fails when the connection breaks, the consumer cancels, a newer attempt
// supersedes it, or Close is called; Send then returns the error, which
// also wraps network.ErrConsumerGone.
//
// In WEAKLY_CONSISTENT mode a producer's in-flight log sends through an
// OutChannel made for one consumer attempt (PartitionRegistry's
// WeakHandler): a buffer stamped with its log position
// (network.Buffer.LogBuffers) carries it on its frame, and the consumer's
// Releases reach OutChannelConfig.OnRelease.
type OutChannel struct {
	key     PartitionKey
	attempt int
	codec   BatchEncoder
	pool    *network.SerializedPool
	limit   int // queued Data buffers before Send waits
	// announce: every ordinary periodic barrier is also announced as a
	// priority event (OutChannelConfig.Announce).
	announce bool
	// onRelease takes the consumer's Release frames
	// (OutChannelConfig.OnRelease); nil drops them.
	onRelease func(wire.LogPos)
	wake      chan struct{} // cap 1: room in the queue
	done      chan struct{} // closed by fail
	reg       *PartitionRegistry

	mu        sync.Mutex
	queue     fifo[outFrame]
	prio      fifo[outFrame]
	backlog   int            // Data buffers queued
	ledger    *credit.Sender // nil until bound
	conn      *Conn          // nil until bound
	id        uint32         // the consumer's channel id
	sched     bool           // on the connection's ready list, or being written
	dataSeq   uint64         // Data buffers accepted: the Seq of the last one
	frameSeq  uint64         // frames written: the next frame's sequence number
	debt      *network.Debt  // charged when the queue went past limit
	waiters   int
	waitMax   int
	waits     uint64
	waitNanos atomic.Int64 // time Sends waited (BackpressureTime)
	err       error
	finished  bool // EndOfPartition queued
	// promote is the checkpoint whose barriers go ahead of queued data
	// (the consumer's Prioritize), 0 for none.
	promote     checkpoint.ID
	prioritized uint64 // barriers moved ahead of queued data by prioritize
	sentData    uint64
	sentByte    uint64
}

// outFrame is a queued Data buffer (data != nil) or event. pos is a Data
// buffer's log position (an event's is in ev.Pos).
type outFrame struct {
	data *network.Serialized
	pos  wire.LogPos
	ev   wire.EventMsg
}

// OutChannelConfig configures an OutChannel.
type OutChannelConfig struct {
	// Key and Attempt name the partition the consumer requests.
	Key     PartitionKey
	Attempt int
	// Codec encodes the edge's batches.
	Codec BatchEncoder
	// Credits is taskmanager.network.credits-per-channel: the buffers
	// queued before Send waits, and what the consumer grants.
	Credits int
	// SegmentSize is the send buffers' initial size; 0 means
	// DefaultSegmentSize.
	SegmentSize int
	// Announce makes every ordinary periodic barrier also travel as a
	// priority Announcement ahead of the queued data, so a consumer that
	// aligns with a timeout (alternating mode) starts its timer even
	// while the barrier waits here for credit, as a local gate made
	// network.WithAnnouncements does.
	Announce bool
	// OnRelease, if set, takes the consumer's Release frames (its
	// completed snapshot covers the producer's in-flight log up to the
	// position), in the order the consumer sent them, while the channel is
	// bound. It is called from the connection's reader goroutine, so it
	// must not block: a slow OnRelease stalls every channel of the
	// connection. A Release arriving before the channel is bound or after
	// it ended is dropped; a later one covers it.
	OnRelease func(wire.LogPos)
}

// NewOutChannel returns an unbound OutChannel. Register it with a
// PartitionRegistry so its consumer's request can find it.
func NewOutChannel(cfg OutChannelConfig) (*OutChannel, error) {
	if cfg.Codec == nil || cfg.Credits < 1 {
		return nil, fmt.Errorf("remote channel %s: need a codec and at least one credit, got %d", cfg.Key, cfg.Credits)
	}
	if cfg.SegmentSize == 0 {
		cfg.SegmentSize = DefaultSegmentSize
	}
	return &OutChannel{
		key:       cfg.Key,
		attempt:   cfg.Attempt,
		codec:     cfg.Codec,
		pool:      network.NewSerializedPool(cfg.SegmentSize),
		limit:     cfg.Credits,
		announce:  cfg.Announce,
		onRelease: cfg.OnRelease,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}, nil
}

var _ network.Sender = (*OutChannel)(nil)

// Send queues b; see network.Channel.Send.
func (o *OutChannel) Send(ctx context.Context, b network.Buffer) error {
	return o.SendOverdraft(ctx, b, 0, nil)
}

// SendOverdraft queues b, a Data buffer overdrawing up to maxOverdraft
// buffers beyond Credits (math.MaxInt: never wait) or an event; see
// network.Sender. The batch is encoded before any wait, and recycled only
// once queued: on an error the caller still owns it. A b with LogBuffers
// set travels with its log position. The error of a failed channel wraps
// network.ErrConsumerGone; one of ctx does not.
func (o *OutChannel) SendOverdraft(ctx context.Context, b network.Buffer, maxOverdraft int, d *network.Debt) error {
	if b.Kind.IsEvent() {
		return o.sendEvent(b, false)
	}
	s := o.pool.Get(0)
	s.Bytes = o.codec.AppendBatch(s.Bytes, b.Data)
	s.Records = o.codec.Records(b.Data)
	if len(s.Bytes) > wire.MaxPayload-32 || s.Records < 1 {
		n, r := len(s.Bytes), s.Records
		s.Release()
		return fmt.Errorf("remote channel %s: batch of %d records encodes to %d bytes, a frame carries 1 record to %d bytes: lower pipeline.batch-size", o.key, r, n, wire.MaxPayload-32)
	}
	o.mu.Lock()
	if err := o.waitLocked(ctx, maxOverdraft); err != nil {
		o.mu.Unlock()
		s.Release()
		return err
	}
	o.queue.push(outFrame{data: s, pos: logPos(b)})
	o.backlog++
	o.dataSeq++
	if o.limit-o.backlog == -1 && d != nil {
		o.debt = d
		d.Charge()
	}
	if o.ledger != nil {
		o.ledger.Push(true)
	}
	o.scheduleLocked()
	o.passWakeLocked()
	o.mu.Unlock()
	if r, ok := b.Data.(recycler); ok {
		r.Recycle()
	}
	return nil
}

// waitLocked waits until a Data buffer may be queued with maxOverdraft.
func (o *OutChannel) waitLocked(ctx context.Context, maxOverdraft int) error {
	if o.err != nil {
		return o.err
	}
	if o.finished {
		return fmt.Errorf("send data to remote channel %s: channel already ended with end of partition; send nothing after it", o.key)
	}
	if o.limit-o.backlog > -maxOverdraft {
		return nil
	}
	o.waits++
	o.waitMax = max(o.waitMax, maxOverdraft)
	waitStart := time.Now()
	defer func() { o.waitNanos.Add(int64(time.Since(waitStart))) }()
	for o.limit-o.backlog <= -maxOverdraft {
		o.waiters++
		o.mu.Unlock()
		var cerr error
		select {
		case <-o.wake:
		case <-o.done:
		case <-ctx.Done():
			cerr = ctx.Err()
		}
		o.mu.Lock()
		o.waiters--
		if o.err != nil {
			return o.err
		}
		if cerr != nil {
			o.passWakeLocked()
			return fmt.Errorf("send data to remote channel %s: waiting for a credit (receiver backpressured): %w", o.key, cerr)
		}
	}
	return nil
}

// passWakeLocked wakes a waiting sender if there is room for it; see
// network.Channel's passWakeLocked for why a woken sender passes it on.
func (o *OutChannel) passWakeLocked() {
	if o.waiters > 0 && o.limit-o.backlog > -o.waitMax {
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
}

// SendPriority queues the barrier or cancel marker b ahead of the queued
// data and ordinary events, behind earlier priority events. It carries the
// Seq of the last Data buffer sent before it, so the consumer records as
// overtaken every Data buffer up to that Seq, queued there or still
// arriving. It never waits.
func (o *OutChannel) SendPriority(b network.Buffer) error {
	if b.Kind != network.Barrier && b.Kind != network.CancelBarrier {
		return fmt.Errorf("priority send of %s to remote channel %s: only barriers and cancel markers may overtake queued data; use Send", b.Kind, o.key)
	}
	return o.sendEvent(b, true)
}

func (o *OutChannel) sendEvent(b network.Buffer, priority bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	if o.finished {
		return fmt.Errorf("send %s to remote channel %s: channel already ended with end of partition; send nothing after it", b.Kind, o.key)
	}
	// Every event notes its position (the Data sent before it), which
	// travels only once it is a priority event.
	f := outFrame{ev: wire.EventMsg{Kind: b.Kind, Barrier: b.Barrier, Cancel: b.Cancel, Seq: o.dataSeq, Watermark: b.Watermark, Idle: b.Idle, Pos: logPos(b)}}
	switch {
	case priority || b.Kind == network.Barrier && o.promote != 0 && b.Barrier.ID == o.promote:
		f.ev.Priority = true
		o.prio.push(f)
	default:
		o.queue.push(f)
		o.finished = b.Kind == network.EndOfPartition
		if o.announce && b.Kind == network.Barrier && b.Barrier.Kind == checkpoint.Periodic {
			o.prio.push(outFrame{ev: wire.EventMsg{Kind: network.Announcement, Barrier: b.Barrier, Priority: true, Seq: o.dataSeq}})
		}
	}
	o.scheduleLocked()
	return nil
}

// logPos is b's position in a weak producer's log, zero if b has none.
func logPos(b network.Buffer) wire.LogPos {
	if b.LogBuffers == 0 {
		return wire.LogPos{}
	}
	return wire.LogPos{Buffers: b.LogBuffers, Records: b.LogRecords}
}

// release takes a Release from the consumer, on the connection's reader.
func (o *OutChannel) release(p wire.LogPos) {
	o.mu.Lock()
	live := o.err == nil
	o.mu.Unlock()
	if live && o.onRelease != nil {
		o.onRelease(p)
	}
}

// prioritize takes a Prioritize from the consumer: the queued barrier of
// checkpoint id moves ahead of the queued data, keeping the Seq of its
// position, and later barriers of id are sent as priority events too. The
// consumer records what the barrier overtook, here or on the stream, as
// with a barrier sent by SendPriority.
func (o *OutChannel) prioritize(id checkpoint.ID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil || id <= o.promote {
		return
	}
	o.promote = id
	if f, ok := o.queue.takeFirst(func(f *outFrame) bool {
		return f.data == nil && f.ev.Kind == network.Barrier && f.ev.Barrier.ID == id
	}); ok {
		f.ev.Priority = true
		o.prio.push(f)
		o.prioritized++
		o.scheduleLocked()
	}
}

// BackpressureWaits counts Sends that found the queue full and waited.
func (o *OutChannel) BackpressureWaits() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.waits
}

// BackpressureTime is the time Sends spent waiting for the queue to drain.
func (o *OutChannel) BackpressureTime() time.Duration {
	return time.Duration(o.waitNanos.Load())
}

// OutStats is a snapshot of an OutChannel for metrics.
type OutStats struct {
	// Queued is the Data buffers waiting to be sent (the backlog the
	// consumer is told); Credit the Data frames the consumer allows now.
	Queued, Credit int
	// Bound is set once the consumer's request arrived.
	Bound bool
	// SentData and SentBytes count Data frames written and their record
	// bytes.
	SentData, SentBytes uint64
	// BackpressureWaits counts Sends that waited.
	BackpressureWaits uint64
	// BuffersAllocated is the send pool's size.
	BuffersAllocated int
	// Prioritized counts barriers a Prioritize from the consumer moved
	// ahead of queued data.
	Prioritized uint64
}

// Stats returns a snapshot.
func (o *OutChannel) Stats() OutStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := OutStats{Queued: o.backlog, Bound: o.ledger != nil, SentData: o.sentData, SentBytes: o.sentByte, BackpressureWaits: o.waits, Prioritized: o.prioritized}
	if o.ledger != nil {
		s.Credit = o.ledger.Credit()
	}
	s.BuffersAllocated = o.pool.Allocated()
	return s
}

// AvailableCredits returns the credits the consumer granted and no Data
// frame has used yet (0 before the consumer's request bound the channel).
func (o *OutChannel) AvailableCredits() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ledger == nil {
		return 0
	}
	return o.ledger.Credit()
}

// Close ends the channel for a task that is shutting down: queued buffers
// are dropped, a waiting Send returns ErrClosed, and a consumer that did
// not get end of partition is told with an Error frame.
func (o *OutChannel) Close() {
	o.fail(fmt.Errorf("remote channel %s: %w", o.key, ErrClosed), true)
}

// Abandon is Close, for a WEAKLY_CONSISTENT producer giving up on this
// consumer attempt (network.Channel.Abandon's counterpart): a Send waiting
// for a credit returns at once, with an error wrapping
// network.ErrConsumerGone like every later Send.
func (o *OutChannel) Abandon() { o.Close() }

// bind subscribes the channel to consumer channel id on c with the initial
// credit of the partition request.
func (o *OutChannel) bind(c *Conn, id uint32, initial, held int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	if o.conn != nil {
		return fmt.Errorf("remote channel %s is subscribed already (by %s)", o.key, o.conn.peer)
	}
	if err := c.addOutput(id, o); err != nil {
		return err
	}
	o.conn, o.id = c, id
	o.ledger = credit.NewSenderHeld(math.MaxInt32, initial, held)
	for range o.backlog {
		o.ledger.Push(true)
	}
	o.scheduleLocked()
	return nil
}

// sendableLocked reports whether the writer may send a frame now.
func (o *OutChannel) sendableLocked() bool {
	if o.conn == nil || o.err != nil {
		return false
	}
	if o.prio.len() > 0 {
		return true
	}
	if o.queue.len() == 0 {
		return false
	}
	return o.queue.peek().data == nil || o.ledger.Credit() > 0
}

// scheduleLocked puts the channel on its connection's ready list if it may
// send and is not there yet.
func (o *OutChannel) scheduleLocked() {
	if !o.sched && o.sendableLocked() {
		o.sched = true
		o.conn.schedule(o)
	}
}

// addCredit takes an AddCredit from the consumer. Credits beyond what the
// consumer ever granted are a protocol violation.
func (o *OutChannel) addCredit(n int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ledger == nil || o.err != nil {
		return nil
	}
	if err := o.ledger.AddCredit(n); err != nil {
		return fmt.Errorf("remote channel %s: %w", o.key, err)
	}
	o.scheduleLocked()
	return nil
}

// writeNext writes the channel's next frame into bw, called by the
// connection's writer for a scheduled channel; a Data frame is counted in
// traffic. more reports whether the channel stays scheduled.
func (o *OutChannel) writeNext(bw *bufio.Writer, traffic *Traffic) (more bool, err error) {
	o.mu.Lock()
	if !o.sendableLocked() {
		o.sched = false
		o.mu.Unlock()
		return false, nil
	}
	var f outFrame
	if o.prio.len() > 0 {
		f = o.prio.pop()
	} else {
		if o.queue.peek().data != nil {
			if _, ok := o.ledger.Pop(); !ok {
				panic("remote: sendable data without credit") // sendableLocked checked it
			}
		}
		f = o.queue.pop()
	}
	seq := o.frameSeq
	o.frameSeq++
	id, backlog := o.id, 0
	if f.data != nil {
		o.backlog--
		backlog = o.backlog
		o.sentData++
		o.sentByte += uint64(len(f.data.Bytes))
		if o.limit-o.backlog == 0 && o.debt != nil {
			o.debt.Repay()
			o.debt = nil
		}
		o.passWakeLocked()
	}
	last := f.data == nil && f.ev.Kind == network.EndOfPartition && !f.ev.Priority
	more = o.sendableLocked()
	o.sched = more
	o.mu.Unlock()

	if f.data != nil {
		_, err = bw.Write(wire.AppendDataHeader(bw.AvailableBuffer(), id, seq, f.pos, backlog, f.data.Records, len(f.data.Bytes)))
		if err == nil {
			_, err = bw.Write(f.data.Bytes)
		}
		if err == nil {
			traffic.sent(len(f.data.Bytes), f.data.Records)
		}
		f.data.Release()
	} else {
		_, err = bw.Write(wire.AppendEvent(bw.AvailableBuffer(), id, seq, f.ev))
	}
	if last && err == nil {
		o.ended()
	}
	return more, err
}

// ended forgets the subscription once end of partition is written: nothing
// more will be sent, and late AddCredits are dropped as unknown.
func (o *OutChannel) ended() {
	o.mu.Lock()
	c := o.conn
	o.mu.Unlock()
	c.removeOutput(o.id, o)
	if o.reg != nil {
		o.reg.unregister(o)
	}
}

// connFailed fails the channel because its connection failed.
func (o *OutChannel) connFailed(err error) {
	o.fail(fmt.Errorf("remote channel %s: %w", o.key, err), false)
}

// fail ends the channel with err, once: queued buffers are released and
// waiting senders return err, wrapped to match network.ErrConsumerGone
// too. With notify, a bound consumer that has not got end of partition
// gets an Error frame with err's message.
func (o *OutChannel) fail(err error, notify bool) {
	o.mu.Lock()
	if o.err != nil {
		o.mu.Unlock()
		return
	}
	o.err = consumerGone{err}
	for o.queue.len() > 0 {
		if f := o.queue.pop(); f.data != nil {
			f.data.Release()
		}
	}
	for o.prio.len() > 0 {
		o.prio.pop()
	}
	if o.debt != nil {
		o.debt.Repay() // the task is failing; do not leave it waiting
		o.debt = nil
	}
	o.backlog = 0
	c, id, finished := o.conn, o.id, o.finished
	close(o.done)
	o.mu.Unlock()
	if c != nil {
		c.removeOutput(id, o)
		if notify && !finished {
			c.sendError(id, err.Error())
		}
	}
	if o.reg != nil {
		o.reg.unregister(o)
	}
}

// consumerGone is the error of a failed OutChannel: err, which says why,
// and network.ErrConsumerGone, which a weak producer tests for to tell a
// lost consumer (its log keeps the buffer for the next attempt) from its
// own end. Both are wrapped, as a fmt.Errorf with two %w would, and the
// message is err's alone: "the consumer is gone" would be wrong for a
// Close.
type consumerGone struct{ err error }

func (e consumerGone) Error() string   { return e.err.Error() }
func (e consumerGone) Unwrap() []error { return []error{e.err, network.ErrConsumerGone} }

// PartitionKey names one output channel of a producer: the consumer subtask
// of one output edge of one producing subtask of a job.
type PartitionKey struct {
	Job      string
	Producer checkpoint.TaskID
	Edge     int
	Consumer int
}

// String renders "demo/1.0/e0->3".
func (k PartitionKey) String() string {
	return fmt.Sprintf("%s/%d.%d/e%d->%d", k.Job, k.Producer.Vertex, k.Producer.Subtask, k.Edge, k.Consumer)
}
