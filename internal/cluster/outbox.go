package cluster

import (
	"errors"
	"fmt"
	"sync"
)

// DefaultQueueLimit is how many messages a session's outbound queue holds
// before the session is declared broken (docs/design/cluster.md, section
// 2). Control messages come at checkpoint rate; a peer 64k messages behind
// is not reading its stream.
const DefaultQueueLimit = 1 << 16

// ErrSessionClosed is returned by Send on a session that has ended; the
// error it ended with is wrapped beside it.
var ErrSessionClosed = errors.New("session closed")

// ErrQueueOverflow is the cause of a session closed because its outbound
// queue passed its limit.
var ErrQueueOverflow = errors.New("outbound queue overflow")

// outbox is a session's queue of outbound messages. push never blocks: a
// gateway call (deploy, trigger, notify) made from a JobMaster or task
// loop must not wait for a slow peer. One writer goroutine drains it onto
// the stream. Past limit messages the session is broken: the outbox
// closes, and the session's owner notices through done.
type outbox[M any] struct {
	limit int
	ready chan struct{} // capacity 1: "the queue is not empty"
	done  chan struct{} // closed by close

	mu     sync.Mutex
	q      []M
	closed bool
	err    error // why it closed; set before done closes
}

func newOutbox[M any](limit int) *outbox[M] {
	return &outbox[M]{limit: limit, ready: make(chan struct{}, 1), done: make(chan struct{})}
}

// push queues m, or closes the outbox when it is full.
func (o *outbox[M]) push(m M) error {
	o.mu.Lock()
	if o.closed {
		err := o.err
		o.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrSessionClosed, err)
	}
	if len(o.q) >= o.limit {
		o.mu.Unlock()
		err := fmt.Errorf("%w: %d messages not sent: the peer is not reading its stream", ErrQueueOverflow, o.limit)
		o.close(err)
		return fmt.Errorf("%w: %w", ErrSessionClosed, err)
	}
	o.q = append(o.q, m)
	o.mu.Unlock()
	select {
	case o.ready <- struct{}{}:
	default:
	}
	return nil
}

// drain moves every queued message into buf (reset first) and returns it.
// The queue's and the buffer's backing arrays swap, so a steady session
// allocates nothing here.
func (o *outbox[M]) drain(buf []M) []M {
	o.mu.Lock()
	defer o.mu.Unlock()
	clear(buf)
	q := o.q
	o.q = buf[:0]
	return q
}

// close ends the outbox with err, if it was open, and reports whether
// this call closed it. Queued messages are dropped: a closed session's
// peer learns the rest from the next session.
func (o *outbox[M]) close(err error) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	o.closed, o.err = true, err
	clear(o.q)
	o.q = nil
	close(o.done)
	return true
}

// cause returns the error the outbox closed with; call it after done.
func (o *outbox[M]) cause() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// pump sends queued messages with send until the outbox closes or stop
// is closed (nil) or a send fails (its error; the caller closes the
// outbox).
func (o *outbox[M]) pump(send func(M) error, stop <-chan struct{}) error {
	var batch []M
	for {
		select {
		case <-o.done:
			return nil
		case <-stop:
			return nil
		case <-o.ready:
		}
		batch = o.drain(batch)
		for _, m := range batch {
			select {
			case <-o.done:
				return nil
			default:
			}
			if err := send(m); err != nil {
				return err
			}
		}
	}
}
