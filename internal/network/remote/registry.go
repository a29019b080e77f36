package remote

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/network/wire"
)

// PartitionRegistry is the producer side's directory of OutChannels, keyed
// by partition (job, producer subtask, output edge, consumer subtask), each
// with the producer's execution attempt. A partition request from a
// consumer binds the matching OutChannel to the connection it came on.
//
// Requests and deployments race: a consumer may ask before its producer is
// deployed here. Such a request waits up to the connect timeout for a
// Register of its attempt; a request for an older attempt than the one
// registered, or one still unanswered after the timeout, gets an Error
// frame on its channel, and the consumer's InputChannel fails with
// ErrPartition. A request never blocks the connection's reader.
//
// A weak request (WEAKLY_CONSISTENT mode, InputConfig.Weak) is answered by
// the WeakHandler instead, which makes an OutChannel for that consumer
// attempt; see SetWeakHandler.
//
// Lock order: PartitionRegistry.mu before OutChannel.mu (a request is
// bound under the registry's lock, so a CancelPartition finds it either
// waiting here or bound to its connection).
//
// A PartitionRegistry is safe for concurrent use.
type PartitionRegistry struct {
	timeout time.Duration
	// handlers counts running WeakHandler calls, for Close.
	handlers sync.WaitGroup

	mu      sync.Mutex
	parts   map[PartitionKey]*OutChannel
	pending map[PartitionKey][]*pendingRequest
	weak    WeakHandler
	// weakReqs are the weak requests whose handler runs.
	weakReqs map[*weakRequest]struct{}
	closed   bool
}

// WeakHandler makes the OutChannel for a weak partition request: the
// consumer attempt consumerAttempt of the partition key asks for the
// producer's logged output from position from on (zero: from the log's
// start). It runs on a goroutine of its own and may block, e.g. until the
// job is deployed on this TaskManager, until ctx ends: ctx carries the
// registry's connect timeout and is cancelled early when the consumer
// cancels, its connection fails or the registry closes.
//
// It returns an unbound OutChannel for key with Attempt consumerAttempt,
// which the registry registers and binds to the requesting consumer, or an
// error, which the consumer gets in an Error frame (its InputChannel fails
// with ErrPartition, naming the partition and the error). An OutChannel
// returned with an error is closed.
type WeakHandler func(ctx context.Context, key PartitionKey, consumerAttempt int, from wire.LogPos) (*OutChannel, error)

// weakRequest is a weak request whose handler runs; the fields after
// cancel are guarded by the registry's mu.
type weakRequest struct {
	conn   *Conn
	id     uint32
	key    PartitionKey
	msg    wire.PartitionRequestMsg
	cancel context.CancelFunc // ends the handler's ctx
	// gone: the consumer cancelled or its connection failed while the
	// handler ran; its channel is closed instead of bound.
	gone bool
}

type pendingRequest struct {
	conn  *Conn
	id    uint32
	msg   wire.PartitionRequestMsg
	timer *time.Timer
}

// NewPartitionRegistry returns an empty registry whose early requests wait
// up to timeout (0: DefaultConnectTimeout).
func NewPartitionRegistry(timeout time.Duration) *PartitionRegistry {
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	return &PartitionRegistry{
		timeout:  timeout,
		parts:    make(map[PartitionKey]*OutChannel),
		pending:  make(map[PartitionKey][]*pendingRequest),
		weakReqs: make(map[*weakRequest]struct{}),
	}
}

// SetWeakHandler makes h answer the weak partition requests arriving from
// now on (nil: refuse them). Unlike an ordinary request, a weak one is not
// matched against Register'ed channels: h makes a channel per consumer
// attempt, the registry registers it under its key, where a newer consumer
// attempt supersedes an older one (which fails, as with Register) and a
// request of an older attempt than the one registered is refused, and
// binds it to the requesting consumer with the request's credit.
func (r *PartitionRegistry) SetWeakHandler(h WeakHandler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.weak = h
}

// Register makes o findable by its consumer's request. It replaces the
// OutChannel of an older attempt of the same partition, which is failed;
// registering an older attempt than the one present is refused. Requests
// waiting for o's attempt are bound now.
func (r *PartitionRegistry) Register(o *OutChannel) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return fmt.Errorf("register remote channel %s: registry closed", o.key)
	}
	old := r.parts[o.key]
	if old != nil && old.attempt > o.attempt {
		r.mu.Unlock()
		return fmt.Errorf("register remote channel %s attempt %d: attempt %d is registered already", o.key, o.attempt, old.attempt)
	}
	if old == o {
		r.mu.Unlock()
		return nil
	}
	r.parts[o.key] = o
	o.reg = r
	var bind, refuse []*pendingRequest
	keep := r.pending[o.key][:0]
	for _, p := range r.pending[o.key] {
		switch {
		case p.msg.Attempt == o.attempt:
			bind = append(bind, p)
		case p.msg.Attempt < o.attempt:
			refuse = append(refuse, p)
		default:
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		delete(r.pending, o.key)
	} else {
		r.pending[o.key] = keep
	}
	for _, p := range bind {
		p.timer.Stop()
		r.bind(o, p.conn, p.id, p.msg.Credit, p.msg.Held)
	}
	r.mu.Unlock()
	if old != nil {
		old.fail(fmt.Errorf("remote channel %s attempt %d: superseded by attempt %d: %w", old.key, old.attempt, o.attempt, ErrClosed), true)
	}
	for _, p := range refuse {
		p.timer.Stop()
		p.conn.sendError(p.id, fmt.Sprintf("partition %s attempt %d was superseded by attempt %d", o.key, p.msg.Attempt, o.attempt))
	}
	return nil
}

// unregister forgets o if it is still registered.
func (r *PartitionRegistry) unregister(o *OutChannel) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.parts[o.key] == o {
		delete(r.parts, o.key)
	}
}

// request answers a PartitionRequest arriving on c's channel id.
func (r *PartitionRegistry) request(c *Conn, id uint32, m wire.PartitionRequestMsg) {
	key := PartitionKey{Job: m.Job, Producer: m.Producer, Edge: m.Edge, Consumer: m.Consumer}
	if m.Weak {
		r.requestWeak(c, id, key, m)
		return
	}
	r.mu.Lock()
	o := r.parts[key]
	switch {
	case r.closed:
		r.mu.Unlock()
		c.sendError(id, fmt.Sprintf("partition %s: TaskManager %s is shutting down", key, c.local))
		return
	case o != nil && o.attempt == m.Attempt:
		r.mu.Unlock()
		r.bind(o, c, id, m.Credit, m.Held)
		return
	case o != nil && o.attempt > m.Attempt:
		r.mu.Unlock()
		c.sendError(id, fmt.Sprintf("partition %s attempt %d was superseded by attempt %d", key, m.Attempt, o.attempt))
		return
	}
	// Not deployed yet (or only an older attempt is): wait for it.
	p := &pendingRequest{conn: c, id: id, msg: m}
	p.timer = time.AfterFunc(r.timeout, func() { r.expire(key, p) })
	r.pending[key] = append(r.pending[key], p)
	r.mu.Unlock()
}

// expire refuses a request that waited the whole connect timeout.
func (r *PartitionRegistry) expire(key PartitionKey, p *pendingRequest) {
	r.mu.Lock()
	found := false
	ps := r.pending[key]
	for i, q := range ps {
		if q == p {
			ps = append(ps[:i], ps[i+1:]...)
			found = true
			break
		}
	}
	if len(ps) == 0 {
		delete(r.pending, key)
	} else {
		r.pending[key] = ps
	}
	r.mu.Unlock()
	if found {
		p.conn.sendError(p.id, fmt.Sprintf("partition %s attempt %d: not deployed on %s within %v (taskmanager.network.connect-timeout)", key, p.msg.Attempt, p.conn.local, r.timeout))
	}
}

// requestWeak starts the WeakHandler for a weak request; runWeak binds
// what it returns.
func (r *PartitionRegistry) requestWeak(c *Conn, id uint32, key PartitionKey, m wire.PartitionRequestMsg) {
	r.mu.Lock()
	h := r.weak
	var refuse string
	switch o := r.parts[key]; {
	case r.closed:
		refuse = fmt.Sprintf("partition %s: TaskManager %s is shutting down", key, c.local)
	case h == nil:
		refuse = fmt.Sprintf("partition %s: consumer attempt %d asks for weakly consistent output, but TaskManager %s serves none (no weak handler): run the job WEAKLY_CONSISTENT on every TaskManager", key, m.Attempt, c.local)
	case o != nil && o.attempt > m.Attempt:
		refuse = fmt.Sprintf("partition %s consumer attempt %d was superseded by consumer attempt %d", key, m.Attempt, o.attempt)
	}
	if refuse != "" {
		r.mu.Unlock()
		c.sendError(id, refuse)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	w := &weakRequest{conn: c, id: id, key: key, msg: m, cancel: cancel}
	r.weakReqs[w] = struct{}{}
	r.handlers.Add(1)
	r.mu.Unlock()
	go r.runWeak(ctx, h, w)
}

// runWeak calls the handler for w and registers and binds its channel,
// unless the consumer went away meanwhile: then the channel is closed, so
// no OutChannel is left bound to nobody.
func (r *PartitionRegistry) runWeak(ctx context.Context, h WeakHandler, w *weakRequest) {
	defer r.handlers.Done()
	o, err := h(ctx, w.key, w.msg.Attempt, w.msg.From)
	w.cancel()
	c, attempt := w.conn, w.msg.Attempt
	var (
		refuse string
		drop   bool        // close o: not bound
		old    *OutChannel // superseded by o
	)
	r.mu.Lock()
	delete(r.weakReqs, w)
	switch {
	case err != nil:
		refuse = fmt.Sprintf("partition %s consumer attempt %d: no weakly consistent output on %s: %v", w.key, attempt, c.local, err)
		drop = o != nil
	case o == nil:
		refuse = fmt.Sprintf("partition %s consumer attempt %d: the weak handler on %s returned no channel", w.key, attempt, c.local)
	case w.gone:
		drop = true // nobody to tell: the consumer cancelled or the connection failed
	case r.closed:
		refuse, drop = fmt.Sprintf("partition %s: TaskManager %s is shutting down", w.key, c.local), true
	case o.key != w.key || o.attempt != attempt:
		refuse, drop = fmt.Sprintf("partition %s consumer attempt %d: the weak handler on %s returned a channel for %s attempt %d", w.key, attempt, c.local, o.key, o.attempt), true
	default:
		cur := r.parts[w.key]
		if cur != nil && cur.attempt > attempt {
			refuse, drop = fmt.Sprintf("partition %s consumer attempt %d was superseded by consumer attempt %d", w.key, attempt, cur.attempt), true
			break
		}
		if cur != o {
			r.parts[w.key] = o
			o.reg = r
			old = cur
		}
		if berr := o.bind(c, w.id, w.msg.Credit, w.msg.Held); berr != nil {
			// Close what this request installed, not a channel the
			// handler handed out twice, which still serves its consumer.
			refuse, drop = fmt.Sprintf("partition %s consumer attempt %d: %v", w.key, attempt, berr), cur != o
		}
	}
	r.mu.Unlock()
	if old != nil {
		old.fail(fmt.Errorf("remote channel %s consumer attempt %d: superseded by consumer attempt %d: %w", old.key, old.attempt, o.attempt, ErrClosed), true)
	}
	if drop {
		o.Close()
	}
	if refuse != "" {
		c.sendError(w.id, refuse)
	}
}

// connFailed gives up the weak requests of a failed connection: their
// handlers' ctx ends, and what they return is closed.
func (r *PartitionRegistry) connFailed(c *Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := range r.weakReqs {
		if w.conn == c {
			w.gone = true
			w.cancel()
		}
	}
}

// cancelPending drops a request still waiting for its producer or its
// weak handler, for a CancelPartition that overtook the deployment.
func (r *PartitionRegistry) cancelPending(c *Conn, id uint32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := range r.weakReqs {
		if w.conn == c && w.id == id && !w.gone {
			w.gone = true
			w.cancel()
			return true
		}
	}
	for key, ps := range r.pending {
		for i, p := range ps {
			if p.conn == c && p.id == id {
				p.timer.Stop()
				if ps = append(ps[:i], ps[i+1:]...); len(ps) == 0 {
					delete(r.pending, key)
				} else {
					r.pending[key] = ps
				}
				return true
			}
		}
	}
	return false
}

func (r *PartitionRegistry) bind(o *OutChannel, c *Conn, id uint32, initial, held int) {
	if err := o.bind(c, id, initial, held); err != nil {
		c.sendError(id, fmt.Sprintf("partition %s: %v", o.key, err))
	}
}

// Close refuses every waiting and later request and stops their timers,
// ends the ctx of running weak handlers and waits for them (the channels
// they return are closed). Registered channels are left to their tasks.
func (r *PartitionRegistry) Close() {
	r.mu.Lock()
	r.closed = true
	pending := r.pending
	r.pending = make(map[PartitionKey][]*pendingRequest)
	for w := range r.weakReqs {
		w.cancel()
	}
	r.mu.Unlock()
	for key, ps := range pending {
		for _, p := range ps {
			p.timer.Stop()
			p.conn.sendError(p.id, fmt.Sprintf("partition %s: TaskManager %s is shutting down", key, p.conn.local))
		}
	}
	r.handlers.Wait()
}
