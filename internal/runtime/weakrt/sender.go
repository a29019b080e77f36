package weakrt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/remote"
	"github.com/weirstream/weir/internal/weak"
)

// weakSender is one output channel of a producer in WEAKLY_CONSISTENT
// mode: the network.Sender its writer sends through, in front of the
// consumer's gate channel. It logs every buffer it sends (weak.Log decides
// what, the sender holds the payloads) and outlives both ends: the
// TaskExecutor keeps it while producer and consumer restart, so a
// restarted consumer is replayed what its snapshot did not cover, and a
// restarted producer's records that the log holds already are dropped.
//
// What to do with each buffer sent is weak.Output's verdict (the rules:
// wait, discard, skip, hold or send); the sender performs it. mu guards
// the log, the decisions and the payloads, never a wait: the producer's
// send to its consumer and a replay's sends happen without it, so the
// consumer task, which truncates the log when its snapshot completes,
// never waits for a producer that waits for the consumer's credit. While
// a replay runs, target is nil and the producer only logs; gen tells a
// send or a replay that the consumer changed while it was sending.
type weakSender struct {
	mu       sync.Mutex
	log      *weak.Log
	out      *weak.Output     // the decisions around log
	payloads []network.Buffer // retained entries, index Base()+1 first, stamped with their positions
	target   weakTarget       // nil while the consumer is down or replaying
	up       chan struct{}    // closed when a consumer (re)connects; replaced on disconnect
	stats    *jobstatus.WeakStats
	gen      uint64 // incremented by every (re)connect and disconnect
	// accounted are the log's counters already added to stats.
	accounted weak.Counters
	// from and to are the producer's and the consumer's figures.
	from, to *taskWeak
	// free are copies of batches the log released, reused by the next
	// copies (at most maxFreeCopies).
	free []any
	// consumer is the consuming task.
	consumer checkpoint.TaskID

	tmu     sync.Mutex
	current weakTarget // the channel disconnect abandons
	// produced: a producer attempt set this log up already (restart).
	produced bool
	// codec encodes the channel's batches for the producer's snapshot
	// (logfile.go); cache keeps what earlier snapshots encoded
	// (logcache.go).
	codec dataflow.ChannelCodec
	cache logCache
	// attempt is the newest consumer attempt that connected from another
	// TaskManager (admit).
	attempt int
	// rctx, rdone and rtarget are the latest reconnect's: a log restored
	// after a consumer reconnected replays to it again (resumeWith).
	rctx    context.Context
	rdone   func(error)
	rtarget weakTarget

	// remoteSent are the bytes earlier remote targets sent, reported the
	// bytes reported to the job's RemoteBytesSent already.
	remoteSent, reported uint64
}

// weakTarget is the consumer side of a weakSender: a gate channel of a
// consumer in this TaskManager (*network.Channel), or a remote.OutChannel
// the consumer's partition request created for one consumer attempt on
// another TaskManager. Both fail their sends with an error wrapping
// network.ErrConsumerGone once their consumer is gone, and Abandon wakes a
// send waiting for its credit.
type weakTarget interface {
	Send(ctx context.Context, b network.Buffer) error
	SendOverdraft(ctx context.Context, b network.Buffer, maxOverdraft int, d *network.Debt) error
	BackpressureWaits() uint64
	BackpressureTime() time.Duration
	Abandon()
}

func newWeakSender(maxRecords int, stats *jobstatus.WeakStats) *weakSender {
	log := weak.NewLog(maxRecords)
	return &weakSender{log: log, out: weak.NewOutput(log), up: make(chan struct{}), stats: stats}
}

var _ network.Sender = (*weakSender)(nil)

// Send logs and sends an event, or a Data buffer as SendOverdraft.
func (s *weakSender) Send(ctx context.Context, b network.Buffer) error {
	return s.SendOverdraft(ctx, b, 0, nil)
}

// SendOverdraft performs weak.Output's verdict on b: it waits for a
// consumer, discards or skips b, or logs it and holds it for a replay or
// sends it to the consumer. Waiting and sending are the two blocking
// calls, each made with mu released.
func (s *weakSender) SendOverdraft(ctx context.Context, b network.Buffer, maxOverdraft int, d *network.Debt) error {
	s.mu.Lock()
	v, err := s.decide(ctx, &b)
	if err != nil || v.Do != weak.Send {
		// Waited in vain, discarded, skipped, or held: the log keeps
		// its own copy of a held buffer.
		s.account()
		s.mu.Unlock()
		recycleBuffer(b)
		return err
	}
	target, gen := s.target, s.gen
	s.account()
	s.mu.Unlock()

	err = target.SendOverdraft(ctx, b, maxOverdraft, d)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Sent(v.Entry, s.gen == gen, err)
	s.account()
	if err == nil {
		return nil
	}
	recycleBuffer(b)
	if !errors.Is(err, network.ErrConsumerGone) {
		return err
	}
	if s.target == target {
		// Logged; a restarted consumer gets it replayed. A producer that
		// fills the log meanwhile waits for it.
		s.target = nil
		s.unrelease()
	}
	return nil
}

// decide asks for the verdict on *b until it is not to wait, waiting for
// a consumer between (mu held, released while it waits), and performs
// what a verdict does to the log's payloads: a logged buffer's copy is
// kept (Hold and Send; *b is stamped with its position, and a Hold's
// original is the caller's to recycle).
func (s *weakSender) decide(ctx context.Context, b *network.Buffer) (weak.Verdict, error) {
	for {
		live := s.target != nil
		var v weak.Verdict
		var ops network.BatchOps
		if b.Kind == network.Data {
			ops = b.Data.(network.BatchOps)
			v = s.out.Data(ops.Len(), live)
		} else {
			v = s.out.Event(eventKind(b.Kind), b.Kind == network.Watermark, b.Watermark, live)
		}
		s.drop(v.Released)
		s.countDuplicated(v.Duplicated)
		switch v.Do {
		case weak.Wait:
			if err := s.waitConsumer(ctx, v.Why); err != nil {
				return v, err
			}
			continue
		case weak.Discard, weak.Skip:
			return v, nil
		}
		b.LogBuffers, b.LogRecords = v.At.Buffers, v.At.Records
		if ops != nil {
			if v.Skip > 0 {
				ops.DropFront(v.Skip)
			}
			var reuse any
			if n := len(s.free); n > 0 {
				reuse, s.free[n-1] = s.free[n-1], nil
				s.free = s.free[:n-1]
			}
			s.payloads = append(s.payloads, network.Buffer{Kind: network.Data, Data: ops.CopyTo(reuse), LogBuffers: b.LogBuffers, LogRecords: b.LogRecords})
		} else {
			s.payloads = append(s.payloads, network.Buffer{Kind: b.Kind, Watermark: b.Watermark, Idle: b.Idle, LogBuffers: b.LogBuffers, LogRecords: b.LogRecords})
		}
		return v, nil
	}
}

// countDuplicated adds n records to the possibly duplicated figures.
func (s *weakSender) countDuplicated(n int) {
	if n == 0 {
		return
	}
	s.stats.Duplicated.Add(int64(n))
	if s.from != nil {
		s.from.duplicated.Add(int64(n))
	}
}

// waitConsumer waits, mu released, until a consumer (re)connects and its
// replay caught up, or ctx ends.
func (s *weakSender) waitConsumer(ctx context.Context, why weak.WaitReason) error {
	up := s.up
	s.mu.Unlock()
	defer s.mu.Lock()
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		if why == weak.WaitPosition {
			return fmt.Errorf("weak output: waiting for the consumer's position, to continue a log lost with its TaskManager: %w", ctx.Err())
		}
		return fmt.Errorf("weak output: waiting for a restarted consumer, the log full (execution.checkpointing.weak.in-flight-log.max-records %d): %w", s.log.Max(), ctx.Err())
	}
}

// consumerFinished makes the channel discard what it is sent from now on:
// its consumer finished, having read it to its end, so a producer
// restarted from a snapshot re-emits only what it read already, and no
// consumer attempt will ever ask for the position a rebuilt log waits
// for. A producer waiting for it returns.
func (s *weakSender) consumerFinished() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Close()
	s.release()
}

// SendPriority is not used in WEAKLY_CONSISTENT mode, which has no
// barriers to prioritize.
func (s *weakSender) SendPriority(b network.Buffer) error {
	return fmt.Errorf("priority send of %s in WEAKLY_CONSISTENT mode: there are no barriers to prioritize", b.Kind)
}

// BackpressureTime is the time sends to the current consumer waited.
func (s *weakSender) BackpressureTime() time.Duration {
	s.tmu.Lock()
	c := s.current
	s.tmu.Unlock()
	if c == nil {
		return 0
	}
	return c.BackpressureTime()
}

// BackpressureWaits counts the sends to the current consumer that waited.
func (s *weakSender) BackpressureWaits() uint64 {
	s.tmu.Lock()
	c := s.current
	s.tmu.Unlock()
	if c == nil {
		return 0
	}
	return c.BackpressureWaits()
}

// account adds what the log counted since the last call to the job's
// figures (mu held).
func (s *weakSender) account() {
	c := s.log.Counters()
	replayed, lost := int64(c.Replayed-s.accounted.Replayed), int64(c.Lost-s.accounted.Lost)
	s.stats.Replayed.Add(replayed)
	s.stats.Lost.Add(lost)
	s.stats.Dropped.Add(int64(c.Dropped - s.accounted.Dropped))
	if s.to != nil {
		s.to.replayed.Add(replayed)
		s.to.lost.Add(lost)
	}
	s.accounted = c
}

// maxFreeCopies bounds the released batch copies a sender keeps for reuse.
const maxFreeCopies = 64

// drop frees the payloads of the n oldest entries the log removed,
// keeping their batches (cleared) for the next copies.
func (s *weakSender) drop(n int) {
	for i := range n {
		if b := s.payloads[i]; b.Kind == network.Data && b.Data != nil && len(s.free) < maxFreeCopies {
			ops := b.Data.(network.BatchOps)
			ops.DropFront(ops.Len()) // clears the records: no garbage pinned
			s.free = append(s.free, b.Data)
		}
		s.payloads[i] = network.Buffer{}
	}
	s.payloads = s.payloads[n:]
	s.cache.release(n)
}

// unrelease makes producers wait for the next consumer again (mu held).
func (s *weakSender) unrelease() {
	select {
	case <-s.up:
		s.up = make(chan struct{})
	default:
	}
}

// release wakes producers waiting for a consumer (mu held).
func (s *weakSender) release() {
	select {
	case <-s.up:
	default:
		close(s.up)
	}
}

// disconnect forgets a consumer that failed or was cancelled: a send
// waiting for its credit returns, and later sends are only logged.
func (s *weakSender) disconnect(ch weakTarget) {
	s.tmu.Lock()
	if s.current != ch {
		s.tmu.Unlock()
		return
	}
	if o, ok := ch.(*remote.OutChannel); ok {
		s.remoteSent += o.Stats().SentBytes
	}
	s.current = nil
	s.tmu.Unlock()
	ch.Abandon()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	if s.target == ch {
		s.target = nil
	}
	select {
	case <-s.up:
		s.up = make(chan struct{})
	default:
	}
}

func (s *weakSender) setCurrent(ch weakTarget) {
	s.tmu.Lock()
	if o, ok := s.current.(*remote.OutChannel); ok && o != ch {
		s.remoteSent += o.Stats().SentBytes
	}
	s.current = ch
	s.tmu.Unlock()
}

// takeRemoteBytes returns the bytes its remote targets sent since the
// last call.
func (s *weakSender) takeRemoteBytes() uint64 {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	total := s.remoteSent
	if o, ok := s.current.(*remote.OutChannel); ok {
		total += o.Stats().SentBytes
	}
	d := total - s.reported
	s.reported = total
	return d
}

// reconnect replays to a restarted consumer's channel ch every entry after
// the position its snapshot read, then makes ch the target. It returns the
// records lost (dropped before the consumer read them) and runs the
// replay on its own goroutine; meanwhile the producer's sends are only
// logged, and the replay sends them too. ctx ends it (the consumer failed
// again, the job ends).
func (s *weakSender) reconnect(ctx context.Context, ch weakTarget, p weak.Position, done func(error)) (lost uint64, err error) {
	s.tmu.Lock()
	old := s.current
	s.tmu.Unlock()
	if old != nil && old != ch {
		s.disconnect(old) // wakes a send still waiting for the old attempt
	}
	s.mu.Lock()
	_, lost, err = s.log.Reconnect(p)
	s.account()
	if err != nil {
		s.mu.Unlock()
		return 0, err
	}
	s.syncPayloads()
	s.setCurrent(ch)
	s.gen++
	s.target = nil
	select {
	case <-s.up:
		s.up = make(chan struct{}) // producers wait for this replay
	default:
	}
	gen := s.gen
	s.rctx, s.rdone, s.rtarget = ctx, done, ch
	s.mu.Unlock()
	go s.replay(ctx, ch, gen, done)
	return lost, nil
}

// replay sends the log's unsent entries to ch one at a time, mu released
// while it waits for ch's credit, and hands ch the live sends once it
// caught up. It stops when the consumer changed (gen).
func (s *weakSender) replay(ctx context.Context, ch weakTarget, gen uint64, done func(error)) {
	for {
		s.mu.Lock()
		if s.gen != gen {
			s.mu.Unlock()
			done(nil)
			return
		}
		i := s.log.Sent() + 1
		if i > s.log.End() {
			if ctx.Err() == nil {
				s.target = ch
				s.release()
			}
			s.mu.Unlock()
			done(nil)
			return
		}
		b := s.payloads[i-s.log.Base()-1]
		if b.Kind == network.Data && b.Data == nil {
			// The entry standing for what a lost log held after the
			// producer's snapshot (weak.EventResumed): never sent, so the
			// consumer sees the hole.
			s.log.MarkSent(i)
			s.mu.Unlock()
			continue
		}
		if b.Kind == network.Data {
			b.Data = b.Data.(network.BatchOps).Copy()
		}
		s.mu.Unlock()
		// No overdraft: the consumer's credits bound what is queued.
		err := ch.Send(ctx, b)
		s.mu.Lock()
		if err != nil {
			s.mu.Unlock()
			recycleBuffer(b)
			done(fmt.Errorf("replay entry %d to a restarted consumer: %w", i, err))
			return
		}
		if s.gen == gen {
			s.log.MarkSent(i)
			s.account()
		}
		s.mu.Unlock()
	}
}

// restart rewinds the log's producer cursor to a restarted producer's
// snapshot position. A producer that cannot replay deterministically
// (nondeterministic: it lost input) may emit other records where the log
// skips those it holds: each skipped record then counts as possibly
// duplicated.
//
// lostLog says the producer restarts after the process that held this
// channel's log was lost (a later attempt, and this TaskManager never ran
// the producer): the log resumes the old one's numbering (weak.Log.Resume)
// and holds the producer back until the consumer's position arrives.
func (s *weakSender) restart(records uint64, nondeterministic, lostLog bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.account()
	produced := s.produced
	s.produced = true
	if lostLog && !produced {
		if err := s.log.Resume(records); err != nil {
			return err
		}
	} else if err := s.log.Restart(records); err != nil {
		return err
	}
	s.out.SetNondeterministic(nondeterministic)
	return nil
}

// admit reports whether a consumer attempt from another TaskManager may
// connect: not one older than an attempt that connected already (two
// requests racing, the older one last).
func (s *weakSender) admit(attempt int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if attempt < s.attempt {
		return false
	}
	s.attempt = attempt
	return true
}

// setCodec gives the sender its edge's codec, for the producer's
// snapshot of the log, unless it has one.
func (s *weakSender) setCodec(c dataflow.ChannelCodec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.codec == nil {
		s.codec = c
	}
}

// resumeWith rebuilds the log of a producer restarted after the process
// that held it was lost, from what the producer's snapshot stored of it
// (weak.Log.ResumeWith); the stored batches become the payloads, and an
// empty one stands for the rest of the lost log. A consumer that
// reconnected before is replayed the restored entries after its position.
func (s *weakSender) resumeWith(rl *restoredLog, cursor uint64, nondeterministic bool) (ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.account()
	if s.produced {
		return false, nil // an earlier attempt here set the log up: it is not lost
	}
	// The payloads first: ResumeWith may settle the numbering for a
	// consumer that reconnected already, and release entries.
	s.drop(len(s.payloads))
	phantom := network.Buffer{Kind: network.Data, LogBuffers: rl.base.Buffers + uint64(len(rl.entries)) + 1, LogRecords: rl.base.Records}
	for _, e := range rl.entries {
		phantom.LogRecords += e.Records
	}
	s.payloads = append(append(s.payloads, rl.payloads...), phantom)
	if err := s.log.ResumeWith(rl.base, rl.entries, cursor); err != nil {
		s.payloads = s.payloads[:0]
		return false, err
	}
	s.produced = true
	s.syncPayloads()
	s.out.SetNondeterministic(nondeterministic)
	if s.log.Parked() && s.rtarget != nil {
		// The consumer's replay ran on the empty log: run it again.
		s.gen++
		s.target = nil
		select {
		case <-s.up:
			s.up = make(chan struct{})
		default:
		}
		go s.replay(s.rctx, s.rtarget, s.gen, s.rdone)
	}
	return true, nil
}

// syncPayloads frees the payloads of entries the log released from its
// front without the bound (a consumer reconnecting past a restored log's
// entries) (mu held).
func (s *weakSender) syncPayloads() {
	if n := len(s.payloads) - int(s.log.End()-s.log.Base()); n > 0 {
		s.drop(n)
	}
}

// nondeterministic makes what the current producer attempt emits from
// now on, where the log holds those records already and skips them, count
// as possibly duplicated: the attempt stopped following its predecessor's
// input (a gap in what it was replayed).
func (s *weakSender) nondeterministic() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.SetNondeterministic(true)
}

// cursor is the records the current producer attempt emitted.
func (s *weakSender) cursor() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.Cursor()
}

// truncate releases what a consumer's completed snapshot covers.
func (s *weakSender) truncate(p weak.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.account()
	n, err := s.log.Truncate(p)
	if err != nil {
		return err
	}
	s.drop(n)
	return nil
}

func eventKind(k network.Kind) weak.LogEvent {
	switch k {
	case network.EndOfData:
		return weak.EventEndOfData
	case network.EndOfPartition:
		return weak.EventEndOfPartition
	}
	return weak.EventOther
}

// recycleBuffer returns a Data buffer's batch to its pool.
func recycleBuffer(b network.Buffer) {
	if b.Kind == network.Data && b.Data != nil {
		if r, ok := b.Data.(interface{ Recycle() }); ok {
			r.Recycle()
		}
	}
}
