package runtime

import (
	"context"
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
	// mailRun runs an operator's action (dataflow.Mailbox): work that
	// completed on another goroutine re-entering the task.
	mailRun
)

// mail is a control message for a task. Control messages enter the task
// through its mailbox and are handled between batches, on the task
// goroutine, so operators never see concurrent calls.
type mail struct {
	kind    mailKind
	barrier checkpoint.Barrier
	id      checkpoint.ID
	err     error
	// ckind is the kind of the checkpoint a mailNotifyComplete reports,
	// if ckindKnown: a JobManager of an older version does not say it
	// (jobmaster.TaskFinal.Completed).
	ckind      checkpoint.Kind
	ckindKnown bool
	// run is a mailRun's action.
	run func(context.Context) error
}

// queue is the unbounded queue of control messages both loops read: a
// task's mailbox (mail, handled between batches) and the JobMaster's inbox
// (reports from tasks and storage results). Sending never blocks: the
// JobMaster must not stall because one task is backpressured, and no task
// or storage worker may stall behind a busy JobMaster. It stays small
// because control messages come at checkpoint and failure rate.
type queue[T any] struct {
	mu    sync.Mutex
	items []T
	// size mirrors len(items) so the task loop can check for mail once per
	// batch with one atomic load, without taking the lock.
	size atomic.Int32
	// ready holds a signal while the queue may be non-empty. It may hold a
	// stale one; a reader takes everything after each signal, and the task
	// loop checks size, not ready, to decide whether there is mail.
	ready chan struct{}
}

func newQueue[T any]() *queue[T] { return &queue[T]{ready: make(chan struct{}, 1)} }

// mailbox is a task's queue of control messages.
type mailbox = queue[mail]

func newMailbox() *mailbox { return newQueue[mail]() }

func (q *queue[T]) put(x T) {
	q.mu.Lock()
	q.items = append(q.items, x)
	q.size.Store(int32(len(q.items)))
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take moves every queued item into dst, in the order they were put, and
// returns it.
func (q *queue[T]) take(dst []T) []T {
	q.mu.Lock()
	dst = append(dst, q.items...)
	clear(q.items)
	q.items = q.items[:0]
	q.size.Store(0)
	q.mu.Unlock()
	return dst
}

// pending reports whether anything is queued.
func (q *queue[T]) pending() bool { return q.size.Load() > 0 }

// operatorMailbox is the dataflow.Mailbox the task's operators get: their
// actions become mail, handled between batches on the task goroutine.
type operatorMailbox struct{ m *mailbox }

func (o operatorMailbox) Execute(fn func(context.Context) error) {
	o.m.put(mail{kind: mailRun, run: fn})
}
