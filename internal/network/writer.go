package network

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/keygroup"
)

// Writer writes the records of one output edge of a task: it routes each
// record to a channel, collects records in one open batch per channel and
// sends a batch when it holds the pool's batch size. A Writer belongs to one
// goroutine (its task) and is not safe for concurrent use.
//
// After an error from Emit, EmitBatch, Flush, Broadcast or BroadcastPriority
// (the context was cancelled while waiting for credit, a Custom partitioner
// misbehaved, or a channel had ended) the task is failing: records of the
// batch being sent are dropped, and the writer should not be used again.
//
// A writer made WithOverdraft sends a full batch even without credit, up to
// a limit per channel, and records the debt; see Debt for why and how the
// task repays it.
type Writer[T any] struct {
	channels []Sender
	open     []openBatch[T] // by channel
	pool     *Pool[T]
	size     int
	s        strategy[T]
	self     int
	owner    []int32          // Hash: key group -> channel, precomputed from keygroup.OperatorIndex
	kgMod    keygroup.Modulus // Hash: x % max parallelism, as keygroup.Of takes it
	route    []int32          // Hash: EmitBatch's scratch of channel indexes
	next     int              // Rebalance: the channel receiving the current chunk
	chunk    int              // Rebalance: records sent to next in the current chunk

	overdraft int   // WithOverdraft: credits a full batch may overdraw per channel
	debt      *Debt // WithOverdraft: charged when a channel goes into overdraft
	timed     bool  // WithTimestamps: batches carry Times
}

// WriterOption configures a Writer at NewWriter.
type WriterOption func(*writerConfig)

type writerConfig struct {
	overdraft int
	debt      *Debt
	timed     bool
}

// WithTimestamps makes the writer's batches carry event timestamps
// (Batch.Times, one per record): EmitTimed and EmitBatchTimed store the
// given ones, Emit and EmitBatch store NoTimestamp. Without it batches have
// nil Times and the timed methods ignore their timestamps. A job sets it on
// the edges whose records have event time, so the others pay nothing.
func WithTimestamps() WriterOption { return func(c *writerConfig) { c.timed = true } }

// WithOverdraft lets the writer send a full batch to a channel without
// credit while the channel is overdrawn by fewer than max batches, instead
// of waiting; beyond max, sending waits for credit as without the option.
// A channel going into overdraft (its credits from 0 to -1) charges d, and
// the consumer's poll that brings them back to 0 repays it. The task
// shares one d among all its writers and waits for it to be repaid between
// batches (Debt), so it never waits for credit inside a batch as long as
// one batch of input fills at most max batches per channel. max = 2 is the
// engine's default (taskmanager.network.max-overdraft-buffers-per-channel).
//
// It panics on max < 0, or max > 0 with a nil d: validated configuration
// never produces them.
func WithOverdraft(max int, d *Debt) WriterOption {
	if max < 0 {
		panic(fmt.Sprintf("network: overdraft of %d buffers per channel: must be at least 0", max))
	}
	if max > 0 && d == nil {
		panic("network: overdraft without a Debt: the task could not tell when to wait for its consumers")
	}
	return func(c *writerConfig) { c.overdraft, c.debt = max, d }
}

// NewWriter returns a writer over the given channels (indexed by consumer
// subtask), routing with p and taking batches from pool. self is the
// writer's own subtask index, used by Forward and as Rebalance's first
// channel. It panics on inconsistent arguments, which a validated job graph
// never produces: no channels, self out of range for Forward, or for Hash a
// max parallelism out of range (keygroup.ValidateParallelism).
//
// The channels are any Senders: a []*Channel of local channels, or a
// []Sender mixing local channels and remote ones (remote.OutChannel), one
// per consumer subtask. S is inferred, so NewWriter(chans, p, pool, self)
// compiles for both.
func NewWriter[T any, S Sender](channels []S, p Partitioner[T], pool *Pool[T], self int, opts ...WriterOption) *Writer[T] {
	n := len(channels)
	if n == 0 {
		panic("network: writer without channels: an output edge needs at least one consumer channel")
	}
	senders := make([]Sender, n)
	for i, c := range channels {
		senders[i] = c
	}
	var cfg writerConfig
	for _, o := range opts {
		o(&cfg)
	}
	s := p.strategy()
	w := &Writer[T]{
		channels:  senders,
		open:      make([]openBatch[T], n),
		pool:      pool,
		size:      pool.BatchSize(),
		s:         s,
		self:      self,
		overdraft: cfg.overdraft,
		debt:      cfg.debt,
		timed:     cfg.timed,
	}
	switch s.mode {
	case modeForward:
		if self < 0 || self >= n {
			panic(fmt.Sprintf("network: forward writer of subtask %d over %d channels: forward needs equal parallelism on both sides", self, n))
		}
	case modeRebalance:
		w.next = w.firstChannel()
	case modeHash:
		if s.hash == nil {
			panic("network: hash partitioner without a hash function")
		}
		if err := keygroup.ValidateParallelism(n, s.maxP); err != nil {
			panic(fmt.Sprintf("network: hash writer: %v", err))
		}
		w.kgMod = keygroup.NewModulus(uint32(s.maxP))
		w.route = make([]int32, 256)
		w.owner = make([]int32, s.maxP)
		for kg := range w.owner {
			w.owner[kg] = int32(keygroup.OperatorIndex(kg, s.maxP, n))
		}
	case modeCustom:
		if s.custom == nil {
			panic("network: custom partitioner without a function")
		}
	}
	return w
}

// Partitioner names the writer's strategy.
func (w *Writer[T]) Partitioner() string { return w.s.name }

// Emit routes r into the open batch of its channel and sends that batch once
// it is full. It blocks only while sending a full batch to a channel without
// credit (backpressure).
//
// The Go compiler does not inline methods of generic types into each other
// here (they are compiled per GC shape and called with a dictionary), so the
// per-record fast path is written out in Emit and in each EmitBatch loop;
// only the once-per-batch slow path is a call.
//
// On a timed writer (WithTimestamps) r gets NoTimestamp: a timed writer
// fills a batch's Times with NoTimestamp when it opens it, so the untimed
// paths store nothing per record and stay as fast as on an untimed writer.
func (w *Writer[T]) Emit(ctx context.Context, r T) error {
	var ch int
	switch w.s.mode {
	case modeHash:
		ch = int(w.owner[w.kgMod.Of(keygroup.Mix(w.s.hash(r)))])
	case modeForward:
		ch = w.self
	case modeRebalance:
		ch = w.next
	case modeBroadcast:
		for ch := range w.channels {
			if err := w.add(ctx, ch, r); err != nil {
				return err
			}
		}
		return nil
	default:
		ch = w.s.custom(r, len(w.channels))
		if uint(ch) >= uint(len(w.channels)) {
			return fmt.Errorf("custom partitioner chose channel %d of %d: return a value in [0, %d)", ch, len(w.channels), len(w.channels))
		}
	}
	if o := &w.open[ch]; o.n+1 < len(o.recs) {
		o.recs[o.n] = r
		o.n++
		return nil
	}
	return w.add(ctx, ch, r)
}

// EmitTimed is Emit for a record with event timestamp ts (milliseconds,
// or NoTimestamp). An untimed writer ignores ts.
func (w *Writer[T]) EmitTimed(ctx context.Context, r T, ts int64) error {
	if !w.timed {
		return w.Emit(ctx, r)
	}
	var ch int
	switch w.s.mode {
	case modeHash:
		ch = int(w.owner[w.kgMod.Of(keygroup.Mix(w.s.hash(r)))])
	case modeForward:
		ch = w.self
	case modeRebalance:
		ch = w.next
	case modeBroadcast:
		for ch := range w.channels {
			if err := w.addTimed(ctx, ch, r, ts); err != nil {
				return err
			}
		}
		return nil
	default:
		ch = w.s.custom(r, len(w.channels))
		if uint(ch) >= uint(len(w.channels)) {
			return fmt.Errorf("custom partitioner chose channel %d of %d: return a value in [0, %d)", ch, len(w.channels), len(w.channels))
		}
	}
	if o := &w.open[ch]; o.n+1 < len(o.recs) {
		o.recs[o.n] = r
		o.times[o.n] = ts
		o.n++
		return nil
	}
	return w.addTimed(ctx, ch, r, ts)
}

// EmitBatchTimed is EmitBatch for records with event timestamps: ts is nil
// (the records have none; a timed writer stores NoTimestamp) or holds
// ts[i] for rs[i]. An untimed writer ignores ts. Neither slice is retained.
func (w *Writer[T]) EmitBatchTimed(ctx context.Context, rs []T, ts []int64) error {
	if ts == nil || !w.timed {
		return w.EmitBatch(ctx, rs)
	}
	if len(ts) != len(rs) {
		return fmt.Errorf("%s writer: %d timestamps for %d records: pass one timestamp per record, or nil", w.s.name, len(ts), len(rs))
	}
	switch w.s.mode {
	case modeHash:
		for len(rs) > 0 {
			n := min(len(rs), len(w.route))
			route, hash, owner, kgMod := w.route[:n], w.s.hash, w.owner, w.kgMod
			for i := range route {
				route[i] = owner[kgMod.Of(keygroup.Mix(hash(rs[i])))]
			}
			if err := w.scatterTimed(ctx, rs[:n], ts[:n], route); err != nil {
				return err
			}
			rs, ts = rs[n:], ts[n:]
		}
		return nil
	case modeForward, modeRebalance:
		for i := range rs {
			ch := w.self
			if w.s.mode == modeRebalance {
				ch = w.next
			}
			if o := &w.open[ch]; o.n+1 < len(o.recs) {
				o.recs[o.n] = rs[i]
				o.times[o.n] = ts[i]
				o.n++
				continue
			}
			if err := w.addTimed(ctx, ch, rs[i], ts[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range rs {
		if err := w.EmitTimed(ctx, rs[i], ts[i]); err != nil {
			return err
		}
	}
	return nil
}

// scatterTimed is scatter with timestamps.
func (w *Writer[T]) scatterTimed(ctx context.Context, rs []T, ts []int64, route []int32) error {
	for i := range rs {
		ch := int(route[i])
		if o := &w.open[ch]; o.n+1 < len(o.recs) {
			o.recs[o.n] = rs[i]
			o.times[o.n] = ts[i]
			o.n++
			continue
		}
		if err := w.addTimed(ctx, ch, rs[i], ts[i]); err != nil {
			return err
		}
	}
	return nil
}

// EmitBatch emits every record of rs in order, with the strategy switch
// hoisted out of the loop. rs is not retained. It is EmitBatchTimed(ctx,
// rs, nil).
func (w *Writer[T]) EmitBatch(ctx context.Context, rs []T) error {
	switch w.s.mode {
	case modeHash:
		// Two passes per chunk: the first only calls the hash function and
		// computes channels, the second only scatters. Across the call to
		// the (non-inlinable) hash function every live register is spilled,
		// so keeping the loop around it small halves the per-record cost.
		for len(rs) > 0 {
			n := min(len(rs), len(w.route))
			route, hash, owner, kgMod := w.route[:n], w.s.hash, w.owner, w.kgMod
			for i := range route {
				route[i] = owner[kgMod.Of(keygroup.Mix(hash(rs[i])))]
			}
			if err := w.scatter(ctx, rs[:n], route); err != nil {
				return err
			}
			rs = rs[n:]
		}
		return nil
	case modeForward, modeRebalance:
		for i := range rs {
			ch := w.self
			if w.s.mode == modeRebalance {
				ch = w.next
			}
			if o := &w.open[ch]; o.n+1 < len(o.recs) {
				o.recs[o.n] = rs[i]
				o.n++
				continue
			}
			if err := w.add(ctx, ch, rs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range rs {
		if err := w.Emit(ctx, rs[i]); err != nil {
			return err
		}
	}
	return nil
}

// scatter appends rs[i] to channel route[i]'s open batch.
func (w *Writer[T]) scatter(ctx context.Context, rs []T, route []int32) error {
	for i := range rs {
		ch := int(route[i])
		if o := &w.open[ch]; o.n+1 < len(o.recs) {
			o.recs[o.n] = rs[i]
			o.n++
			continue
		}
		if err := w.add(ctx, ch, rs[i]); err != nil {
			return err
		}
	}
	return nil
}

// openBatch is the batch a channel is filling. recs is the batch's records
// at full length and n the number filled, so appending a record is one
// element store and one integer store, with no slice header or pointer
// written per record. times is the batch's Times at full length on a timed
// writer, prefilled with NoTimestamp, and nil otherwise.
type openBatch[T any] struct {
	recs  []T
	times []int64
	n     int
	batch *Batch[T]
}

// add appends r to channel ch's open batch, opening one first if needed,
// and sends the batch when full: the slow path of Emit.
func (w *Writer[T]) add(ctx context.Context, ch int, r T) error {
	o := &w.open[ch]
	if o.n >= len(o.recs) {
		w.start(o)
	}
	o.recs[o.n] = r
	o.n++
	if o.n < len(o.recs) {
		return nil
	}
	return w.send(ctx, ch)
}

// addTimed is add for a record with timestamp ts on a timed writer.
func (w *Writer[T]) addTimed(ctx context.Context, ch int, r T, ts int64) error {
	o := &w.open[ch]
	if o.n >= len(o.recs) {
		w.start(o)
	}
	o.times[o.n] = ts
	return w.add(ctx, ch, r)
}

// start opens a batch for o, which has none. On a timed writer it fills
// the batch's times with NoTimestamp, once per batch, so that Emit and
// EmitBatch need not store a timestamp per record.
func (w *Writer[T]) start(o *openBatch[T]) {
	b := w.pool.Get()
	if cap(b.Records) < w.size { // a consumer replaced the slice before recycling
		b.Records = make([]T, 0, w.size)
	}
	n := w.size
	if w.s.mode == modeRebalance {
		n -= w.chunk // the batch ends where the chunk does
	}
	o.batch, o.recs, o.n = b, b.Records[:n], 0
	if w.timed {
		if cap(b.Times) < w.size {
			b.Times = make([]int64, w.size)
		}
		o.times = b.Times[:w.size]
		for i := range o.times {
			o.times[i] = NoTimestamp
		}
	}
}

// send sends channel ch's open batch as one Data buffer, overdrawing up to
// the writer's limit.
func (w *Writer[T]) send(ctx context.Context, ch int) error {
	return w.sendLimit(ctx, ch, w.overdraft)
}

// sendLimit sends channel ch's open batch, overdrawing up to limit credits
// (noLimit: never wait).
func (w *Writer[T]) sendLimit(ctx context.Context, ch int, limit int) error {
	o := &w.open[ch]
	b := o.batch
	b.Records = o.recs[:o.n]
	if w.timed {
		b.Times = o.times[:o.n]
	} else {
		b.Times = nil // a batch that once carried times, recycled into this pool
	}
	if w.s.mode == modeRebalance {
		// A chunk is size records whatever the batches it was sent in: a
		// flush of a partial batch keeps the channel, so which channel a
		// record goes to depends only on how many records the writer
		// emitted before it (SetRebalancePosition).
		if w.chunk += o.n; w.chunk >= w.size {
			w.chunk = 0
			w.next++
			if w.next == len(w.channels) {
				w.next = 0
			}
		}
	}
	*o = openBatch[T]{}
	if err := w.channels[ch].SendOverdraft(ctx, Buffer{Kind: Data, Data: b}, limit, w.debt); err != nil {
		b.Recycle()
		return fmt.Errorf("%s writer: %w", w.s.name, err)
	}
	return nil
}

// Flush sends every non-empty open batch, in channel order. A timed
// writer's batches carry the Times of their records.
func (w *Writer[T]) Flush(ctx context.Context) error {
	for ch := range w.open {
		if w.open[ch].n > 0 {
			if err := w.send(ctx, ch); err != nil {
				return err
			}
		}
	}
	return nil
}

// Broadcast sends every non-empty open batch, then the event b to every
// channel, so the event follows every record emitted before it on each
// channel. Use it for barriers, cancel markers, end of data, end of
// partition, watermarks and watermark status changes.
//
// The open batches go out without waiting for credit, overdrawing by at
// most one batch per channel and event beyond the writer's limit, and
// events take no credit: Broadcast never waits, so a task can always pass on a barrier
// (or take a snapshot) promptly, whatever its consumers' backlog. The
// overdraft is repaid like any other (Debt); without WithOverdraft the
// next full batch simply waits until the channel has credit again.
func (w *Writer[T]) Broadcast(ctx context.Context, b Buffer) error {
	if !b.Kind.IsEvent() {
		return fmt.Errorf("broadcast of a data buffer: emit records with Emit; Broadcast is for events")
	}
	if err := w.flushNoWait(ctx); err != nil {
		return err
	}
	for ch, c := range w.channels {
		if err := c.Send(ctx, b); err != nil {
			return fmt.Errorf("%s writer: broadcast %s to channel %d: %w", w.s.name, b.Kind, ch, err)
		}
	}
	return nil
}

// BroadcastPriority sends every non-empty open batch as Broadcast does,
// then the event b to every channel with Channel.SendPriority: b overtakes
// the data queued on each channel, and its Seq tells the consumer which
// records it overtook, including the batches just sent. Use it for the
// barriers and cancel markers of unaligned checkpoints. It never waits.
func (w *Writer[T]) BroadcastPriority(b Buffer) error {
	if !canOvertake(b.Kind) {
		return fmt.Errorf("%s writer: priority broadcast of %s: only barriers, cancel markers and announcements may overtake queued data; use Broadcast", w.s.name, b.Kind)
	}
	if err := w.flushNoWait(context.Background()); err != nil {
		return err
	}
	for ch, c := range w.channels {
		if err := c.SendPriority(b); err != nil {
			return fmt.Errorf("%s writer: priority broadcast %s to channel %d: %w", w.s.name, b.Kind, ch, err)
		}
	}
	return nil
}

// flushNoWait sends every non-empty open batch without waiting for credit,
// in channel order. It fails only on an ended channel.
func (w *Writer[T]) flushNoWait(ctx context.Context) error {
	for ch := range w.open {
		if w.open[ch].n > 0 {
			if err := w.sendLimit(ctx, ch, noLimit); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close recycles the open batches without sending them, for a task that is
// shutting down after a failure. The writer must not be used afterwards.
func (w *Writer[T]) Close() {
	for ch := range w.open {
		if b := w.open[ch].batch; b != nil {
			b.Records = w.open[ch].recs[:w.open[ch].n] // so Recycle clears them
			b.Recycle()
			w.open[ch] = openBatch[T]{}
		}
	}
}

// SetRebalancePosition places a Rebalance writer's round robin where it
// was after emitting records records since its job started: chunks of
// the batch size go to the channels in turn from the writer's own subtask
// index, so a restarted producer that emits the same records again sends
// each to the channel it went to before (WEAKLY_CONSISTENT mode's output
// logs recognise what a consumer had by its position in its channel). It
// does nothing for the other partitioners, and must be called before the
// writer emits.
func (w *Writer[T]) SetRebalancePosition(records uint64) {
	if w.s.mode != modeRebalance {
		return
	}
	n, size := uint64(len(w.channels)), uint64(w.size)
	w.next = int((uint64(w.firstChannel()) + records/size) % n)
	w.chunk = int(records % size)
}

// firstChannel is the channel a Rebalance writer's first chunk goes to:
// the writer's own subtask index, modulo the channels, so parallel
// producers start on different consumers.
func (w *Writer[T]) firstChannel() int {
	n := len(w.channels)
	return ((w.self % n) + n) % n
}
