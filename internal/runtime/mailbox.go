package runtime

import (
	"sync"
	"sync/atomic"

	"github.com/weirstream/weir/internal/checkpoint"
)

type mailKind uint8

const (
	mailTrigger mailKind = iota
	mailNotifyComplete
	mailNotifyAborted
	mailAsyncFailed
	// mailStop asks a source task to stop reading, as if its input ended.
	mailStop
)

// mail is a control message for a task. Control messages enter the task
// through its mailbox and are handled between batches, on the task
// goroutine, so operators never see concurrent calls.
type mail struct {
	kind    mailKind
	barrier checkpoint.Barrier
	id      checkpoint.ID
	err     error
}

// mailbox is an unbounded queue of control messages. It never blocks the
// sender: the JobManager must not stall because one task is backpressured.
// It stays small because control messages come at checkpoint rate.
type mailbox struct {
	mu    sync.Mutex
	queue []mail
	// size mirrors len(queue) so the task loop can check for mail once per
	// batch with one atomic load, without taking the lock.
	size atomic.Int32
	// ready wakes a task waiting idle. It may hold a stale signal; the task
	// loop checks size, not ready, to decide whether there is mail.
	ready chan struct{}
}

func newMailbox() *mailbox {
	return &mailbox{ready: make(chan struct{}, 1)}
}

func (m *mailbox) put(x mail) {
	m.mu.Lock()
	m.queue = append(m.queue, x)
	m.size.Store(int32(len(m.queue)))
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

// take moves all queued messages into dst and returns it.
func (m *mailbox) take(dst []mail) []mail {
	m.mu.Lock()
	dst = append(dst, m.queue...)
	clear(m.queue)
	m.queue = m.queue[:0]
	m.size.Store(0)
	m.mu.Unlock()
	return dst
}

// pending reports whether mail is queued.
func (m *mailbox) pending() bool { return m.size.Load() > 0 }
