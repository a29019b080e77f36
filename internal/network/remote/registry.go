package remote

import (
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
// A PartitionRegistry is safe for concurrent use.
type PartitionRegistry struct {
	timeout time.Duration

	mu      sync.Mutex
	parts   map[PartitionKey]*OutChannel
	pending map[PartitionKey][]*pendingRequest
	closed  bool
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
		timeout: timeout,
		parts:   make(map[PartitionKey]*OutChannel),
		pending: make(map[PartitionKey][]*pendingRequest),
	}
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
	r.mu.Unlock()
	if old != nil {
		old.fail(fmt.Errorf("remote channel %s attempt %d: superseded by attempt %d: %w", old.key, old.attempt, o.attempt, ErrClosed), true)
	}
	for _, p := range refuse {
		p.timer.Stop()
		p.conn.sendError(p.id, fmt.Sprintf("partition %s attempt %d was superseded by attempt %d", o.key, p.msg.Attempt, o.attempt))
	}
	for _, p := range bind {
		p.timer.Stop()
		r.bind(o, p.conn, p.id, p.msg.Credit)
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
	r.mu.Lock()
	o := r.parts[key]
	switch {
	case r.closed:
		r.mu.Unlock()
		c.sendError(id, fmt.Sprintf("partition %s: TaskManager %s is shutting down", key, c.local))
		return
	case o != nil && o.attempt == m.Attempt:
		r.mu.Unlock()
		r.bind(o, c, id, m.Credit)
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

// cancelPending drops a request still waiting for its producer, for a
// CancelPartition that overtook the deployment.
func (r *PartitionRegistry) cancelPending(c *Conn, id uint32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
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

func (r *PartitionRegistry) bind(o *OutChannel, c *Conn, id uint32, initial int) {
	if err := o.bind(c, id, initial); err != nil {
		c.sendError(id, fmt.Sprintf("partition %s: %v", o.key, err))
	}
}

// Close refuses every waiting and later request and stops their timers.
// Registered channels are left to their tasks.
func (r *PartitionRegistry) Close() {
	r.mu.Lock()
	r.closed = true
	pending := r.pending
	r.pending = make(map[PartitionKey][]*pendingRequest)
	r.mu.Unlock()
	for key, ps := range pending {
		for _, p := range ps {
			p.timer.Stop()
			p.conn.sendError(p.id, fmt.Sprintf("partition %s: TaskManager %s is shutting down", key, p.conn.local))
		}
	}
}
