package weakrt

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/wire"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/weak"
)

// weakKey names one output channel for the life of a job, whatever the
// attempts of its ends: producer subtask, its output edge, consumer subtask.
type weakKey struct {
	producer checkpoint.TaskID
	edge     int
	consumer int
}

// weakRegistry is what a TaskExecutor keeps of a WEAKLY_CONSISTENT job
// outside its tasks, so that it survives a task's failure: the in-flight
// log of every output channel (weakSender), each consuming task's log of
// the channels it consumed in order (determinants), the positions of its
// snapshots until they complete, and who owns each snapshot id.
//
// The task goroutine appends determinants without a lock: only the
// current attempt of a task touches its log, and a restarted attempt is
// built after the failed one ended.
type weakRegistry struct {
	maxRecords int
	stats      *jobstatus.WeakStats
	now        func() time.Time
	// job is the job as prepared on this TaskExecutor, log its logger
	// (Mode.NewJob; zero in tests of the registry alone).
	job runtime.JobInfo
	log *slog.Logger

	mu       sync.Mutex
	senders  map[weakKey]*weakSender
	dets     map[checkpoint.TaskID]*determinants
	inputs   map[deployment.ExecutionID][]weakInput // a consuming execution's channels
	pending  map[checkpoint.TaskID]map[checkpoint.ID]*checkpoint.WeakPositions
	owner    map[checkpoint.ID]checkpoint.TaskID
	failedAt map[checkpoint.TaskID]time.Time
	deployed map[checkpoint.TaskID]bool
	perTask  map[checkpoint.TaskID]*taskWeak
	// finished are the consumer tasks that finished (WeakPeers): the
	// logs of channels to them discard. moved is each producer's latest
	// move: an input registered after its WeakPeers follows it too.
	finished map[checkpoint.TaskID]bool
	moved    map[checkpoint.TaskID]deployment.ChannelDesc
}

// taskWeak is one subtask's figures (jobstatus.TaskWeakStats), kept across its
// attempts; the senders add to their producer's and consumer's.
type taskWeak struct {
	failures, restarts, replayed, lost, duplicated, lastRecovery atomic.Int64
}

// task returns t's figures (r.mu held).
func (r *weakRegistry) taskLocked(t checkpoint.TaskID) *taskWeak {
	tw := r.perTask[t]
	if tw == nil {
		tw = &taskWeak{}
		r.perTask[t] = tw
	}
	return tw
}

// taskStats returns t's figures for jobstatus.TaskStats.
func (r *weakRegistry) taskStats(t checkpoint.TaskID) *jobstatus.TaskWeakStats {
	r.mu.Lock()
	tw := r.taskLocked(t)
	r.mu.Unlock()
	return &jobstatus.TaskWeakStats{
		Failures: tw.failures.Load(), Restarts: tw.restarts.Load(),
		Replayed: tw.replayed.Load(), Lost: tw.lost.Load(), Duplicated: tw.duplicated.Load(),
		LastRecovery: time.Duration(tw.lastRecovery.Load()),
	}
}

// weakInput is one gate channel of a consuming execution: fed by a
// producer's log in this TaskManager (ch), or through the data plane from
// one on another TaskManager (remote), which a completed snapshot tells
// how far it may truncate.
type weakInput struct {
	key    weakKey
	ch     *network.Channel
	remote *weakRemoteIn
	// drain stands for an ended channel whose producer moved here
	// (toLocal): the log replays into nothing.
	drain *drainTarget
}

// drainTarget is the consumer end of a channel that ended already: what
// its producer's log sends it is dropped. A consumer whose remote
// producer moved into its TaskManager after the channel ended connects
// the log to one, so that the log learns the consumer's position.
type drainTarget struct{ _ byte } // not zero-size: each is a distinct target

func (*drainTarget) Send(_ context.Context, b network.Buffer) error {
	recycleBuffer(b)
	return nil
}

func (*drainTarget) SendOverdraft(_ context.Context, b network.Buffer, _ int, _ *network.Debt) error {
	recycleBuffer(b)
	return nil
}

func (*drainTarget) BackpressureWaits() uint64 { return 0 }

func (*drainTarget) BackpressureTime() time.Duration { return 0 }
func (*drainTarget) Abandon()                        {}

// determinants is a task's log of what made its run nondeterministic, in
// order: the gate channel of every buffer it polled with the processing
// time its operators read while they processed it, and the time of every
// firing of processing-time timers; entries base+1 … base+len(log).
// A restarted attempt polls its replayed input and fires its timers in
// this order, at these times, up to the end of the log, so it computes
// and emits exactly what the failed attempt did.
type determinants struct {
	base  uint64
	chans []determinant
}

// determinant is one entry: a polled channel (ch >= 0) and the processing
// time (unix ms) the task's operators read for its buffer, or
// processing-time timers fired at time at (ch < 0).
type determinant struct {
	ch int32
	at int64
}

func (d *determinants) end() uint64 { return d.base + uint64(len(d.chans)) }

// truncate forgets the entries up to index upTo.
func (d *determinants) truncate(upTo uint64) {
	if upTo <= d.base {
		return
	}
	n := min(upTo-d.base, uint64(len(d.chans)))
	d.chans = append(d.chans[:0], d.chans[n:]...)
	d.base += n
}

func newWeakRegistry(maxRecords int, stats *jobstatus.WeakStats, now func() time.Time) *weakRegistry {
	return &weakRegistry{
		maxRecords: maxRecords, stats: stats, now: now,
		senders:  map[weakKey]*weakSender{},
		dets:     map[checkpoint.TaskID]*determinants{},
		inputs:   map[deployment.ExecutionID][]weakInput{},
		pending:  map[checkpoint.TaskID]map[checkpoint.ID]*checkpoint.WeakPositions{},
		owner:    map[checkpoint.ID]checkpoint.TaskID{},
		failedAt: map[checkpoint.TaskID]time.Time{},
		deployed: map[checkpoint.TaskID]bool{},
		perTask:  map[checkpoint.TaskID]*taskWeak{},
		finished: map[checkpoint.TaskID]bool{},
		moved:    map[checkpoint.TaskID]deployment.ChannelDesc{},
	}
}

// sender returns the log of channel k, to consumer task to, and whether
// it existed already.
func (r *weakRegistry) sender(k weakKey, to checkpoint.TaskID) (s *weakSender, existed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s = r.senders[k]; s != nil {
		return s, true
	}
	s = newWeakSender(r.maxRecords, r.stats)
	s.from, s.to = r.taskLocked(k.producer), r.taskLocked(to)
	s.consumer = to
	if r.finished[to] {
		s.out.Close()
	}
	r.senders[k] = s
	return s, false
}

// peers applies a WeakPeers update: the logs of channels to finished
// consumers discard from now on (weakSender.consumerFinished), and every
// running consumer's remote input from a moved producer reconnects to
// its new attempt (weakRemoteIn.move). It returns the channels moved.
func (r *weakRegistry) peers(u deployment.WeakPeersUpdate) (moved int) {
	r.mu.Lock()
	var done []*weakSender
	for _, t := range u.Finished {
		r.finished[t] = true
	}
	for _, m := range u.Moved {
		if cur, ok := r.moved[m.Peer.Task]; !ok || cur.Peer.Attempt <= m.Peer.Attempt {
			r.moved[m.Peer.Task] = m
		}
	}
	for _, s := range r.senders {
		if r.finished[s.consumer] {
			done = append(done, s)
		}
	}
	var moves []func()
	for _, ins := range r.inputs {
		for _, in := range ins {
			if in.remote == nil {
				continue
			}
			for _, m := range u.Moved {
				if m.Peer.Task == in.key.producer {
					w, m := in.remote, m
					moves = append(moves, func() { w.move(m) })
				}
			}
		}
	}
	r.mu.Unlock()
	for _, s := range done {
		s.consumerFinished()
	}
	for _, f := range moves {
		f()
	}
	return len(moves)
}

// lookup returns the log of channel k, nil if its producer never ran.
func (r *weakRegistry) lookup(k weakKey) *weakSender {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.senders[k]
}

// dets returns a task's determinant log.
func (r *weakRegistry) determinants(t checkpoint.TaskID) *determinants {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.dets[t]
	if d == nil {
		d = &determinants{}
		r.dets[t] = d
	}
	return d
}

// deploy notes that attempt of t is deployed and reports whether t ran
// here before. Every later attempt is a restart, counted; one that never
// ran here took over from an attempt whose TaskManager was lost, which
// never reported its failure: that failure is counted now.
func (r *weakRegistry) deploy(t checkpoint.TaskID, attempt int) (ranHere bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ranHere = r.deployed[t]
	r.deployed[t] = true
	if attempt > 0 || ranHere {
		r.stats.TaskRestarts.Add(1)
		r.taskLocked(t).restarts.Add(1)
		if _, seen := r.failedAt[t]; !ranHere && !seen {
			// (A failure this TaskManager saw, of an attempt whose build
			// failed before it was deployed here, is counted already.)
			r.failedAt[t] = r.now()
			r.stats.Failures.Add(1)
			r.taskLocked(t).failures.Add(1)
		}
	}
	return ranHere
}

// connectInputs wires a consuming execution's gate to its producers'
// logs, creating those of producers not built yet: each replays what
// follows the position the consumer's snapshot read (pos nil: from the
// start), then sends live. done is called with a replay's error (the
// consumer fails).
//
// lost is the records the consumer needed that the logs no longer held:
// then its replay cannot follow its determinants.
//
// Channels in remotes (non-nil there) come from producers on other
// TaskManagers: their partition requests asked for the replay already.
func (r *weakRegistry) connectInputs(ctx context.Context, exec deployment.ExecutionID, keys []weakKey, g *network.Gate, remotes []*weakRemoteIn, pos *checkpoint.WeakPositions, done func(error)) (lost uint64, err error) {
	ins := make([]weakInput, len(keys))
	for ch, k := range keys {
		if ch < len(remotes) && remotes[ch] != nil {
			ch := ch
			remotes[ch].local = func(p wire.LogPos, ended bool) error {
				return r.toLocal(ctx, exec, ch, g, p, ended, done)
			}
			ins[ch] = weakInput{key: k, remote: remotes[ch]}
			continue
		}
		ins[ch] = weakInput{key: k, ch: g.Channel(ch)}
		s, _ := r.sender(k, exec.Task)
		var p weak.Position
		if pos != nil && ch < len(pos.Inputs) {
			p = weak.Position{Buffers: pos.Inputs[ch].Buffers, Records: pos.Inputs[ch].Records}
		}
		n, err := s.reconnect(ctx, g.Channel(ch), p, func(err error) {
			if err != nil && ctx.Err() == nil {
				done(err)
			}
		})
		if err != nil {
			return lost, fmt.Errorf("input channel %d of %s from task %d/%d: %w", ch, exec, k.producer.Vertex, k.producer.Subtask, err)
		}
		lost += n
	}
	r.mu.Lock()
	r.inputs[exec] = ins
	var follow []func()
	for _, in := range ins {
		// A producer that moved before this consumer registered (its
		// deployment raced the WeakPeers): follow it now; a move to
		// where the input runs already is a no-op.
		if m, ok := r.moved[in.key.producer]; ok && in.remote != nil {
			w := in.remote
			follow = append(follow, func() { w.move(m) })
		}
	}
	r.mu.Unlock()
	for _, f := range follow {
		f()
	}
	return lost, nil
}

// toLocal connects gate channel ch of a running consumer, fed until now by
// a producer on another TaskManager, to that producer's log here: the
// producer moved into this TaskManager. The log replays what follows pos,
// the position of the last buffer the channel received; a channel whose
// end was received (ended) only tells the log its position.
func (r *weakRegistry) toLocal(ctx context.Context, exec deployment.ExecutionID, ch int, g *network.Gate, pos wire.LogPos, ended bool, fail func(error)) error {
	r.mu.Lock()
	ins := r.inputs[exec]
	if ch >= len(ins) {
		r.mu.Unlock()
		return fmt.Errorf("input channel %d of %s is not connected", ch, exec)
	}
	in := ins[ch]
	r.mu.Unlock()
	s, _ := r.sender(in.key, exec.Task)
	var target weakTarget
	next := weakInput{key: in.key}
	if ended {
		next.drain = &drainTarget{}
		target = next.drain
	} else {
		// The channel's credits are the gate's own again: the log's sends
		// wait for them as a local producer's do.
		g.SetCreditListener(ch, nil)
		next.ch = g.Channel(ch)
		target = next.ch
	}
	r.mu.Lock()
	if cur := r.inputs[exec]; ch < len(cur) {
		cur[ch] = next
	}
	r.mu.Unlock()
	if _, err := s.reconnect(ctx, target, weak.Position{Buffers: pos.Buffers, Records: pos.Records}, func(err error) {
		if err != nil && ctx.Err() == nil {
			fail(err)
		}
	}); err != nil {
		return fmt.Errorf("input channel %d of %s from task %d/%d, now in this TaskManager: %w", ch, exec, in.key.producer.Vertex, in.key.producer.Subtask, err)
	}
	return nil
}

// ended disconnects an ended consuming execution from its producers' logs
// (they keep logging for its next attempt) and notes a failure's time.
func (r *weakRegistry) ended(exec deployment.ExecutionID, failed bool) {
	r.mu.Lock()
	ins := r.inputs[exec]
	delete(r.inputs, exec)
	if failed {
		r.failedAt[exec.Task] = r.now()
		r.stats.Failures.Add(1)
		r.taskLocked(exec.Task).failures.Add(1)
	}
	r.mu.Unlock()
	for _, in := range ins {
		var t weakTarget
		switch {
		case in.ch != nil:
			t = in.ch
		case in.drain != nil:
			t = in.drain
		default:
			continue // remote: closing the input cancels the partition
		}
		if s := r.lookup(in.key); s != nil {
			s.disconnect(t)
		}
	}
}

// recovered records that t's restarted attempt processes again.
func (r *weakRegistry) recovered(t checkpoint.TaskID) {
	r.mu.Lock()
	at, ok := r.failedAt[t]
	delete(r.failedAt, t)
	tw := r.taskLocked(t)
	r.mu.Unlock()
	if ok {
		d := r.now().Sub(at)
		tw.lastRecovery.Store(int64(d))
		r.stats.RecoveryNanos.Add(int64(d))
		r.stats.LastRecoveryNanos.Store(int64(d))
		r.stats.Recoveries.Add(1)
	}
}

// snapshotTaken remembers the positions of t's snapshot id until it
// completes, and that id is t's.
func (r *weakRegistry) snapshotTaken(t checkpoint.TaskID, id checkpoint.ID, p *checkpoint.WeakPositions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.pending[t]
	if m == nil {
		m = map[checkpoint.ID]*checkpoint.WeakPositions{}
		r.pending[t] = m
	}
	m[id] = p
	r.owner[id] = t
}

// ownerOf returns the task whose snapshot id is.
func (r *weakRegistry) ownerOf(id checkpoint.ID) (checkpoint.TaskID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.owner[id]
	return t, ok
}

// completed releases, for t's completed snapshot id, what its producers'
// logs kept for it (everything up to the positions it read) and the
// determinants it covers; older pending snapshots of t are forgotten.
func (r *weakRegistry) completed(t checkpoint.TaskID, exec deployment.ExecutionID, id checkpoint.ID) error {
	r.mu.Lock()
	p := r.pending[t][id]
	for old := range r.pending[t] {
		if old <= id {
			delete(r.pending[t], old)
			delete(r.owner, old)
		}
	}
	ins := slices.Clone(r.inputs[exec]) // toLocal replaces entries
	r.mu.Unlock()
	if p == nil {
		return nil
	}
	for ch, in := range ins {
		if ch >= len(p.Inputs) {
			break
		}
		if in.remote != nil {
			in.remote.release(wire.LogPos{Buffers: p.Inputs[ch].Buffers, Records: p.Inputs[ch].Records})
			continue
		}
		if s := r.lookup(in.key); s != nil {
			if err := s.truncate(weak.Position{Buffers: p.Inputs[ch].Buffers, Records: p.Inputs[ch].Records}); err != nil {
				return fmt.Errorf("snapshot %d: input channel %d: %w", id, ch, err)
			}
		}
	}
	return nil
}

// aborted forgets t's snapshot id.
func (r *weakRegistry) aborted(t checkpoint.TaskID, id checkpoint.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending[t], id)
	delete(r.owner, id)
}
