package weir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/runtime"
)

// Source produces records. Each parallel instance reads its own share of
// the input and keeps its position in operator state, so that after a
// restore it replays exactly the records after the checkpoint.
type Source[T any] interface {
	// Open prepares the instance ctx.Subtask() of ctx.Parallelism();
	// register the position state here (GetOperatorListState).
	Open(ctx *Context) error
	// Read appends up to max records to dst and returns it. At the end of
	// a bounded input it returns io.EOF (records appended in the same call
	// are still emitted). It may block briefly (rate limits, polling) but
	// should return within milliseconds so checkpoints are not delayed.
	Read(dst []T, max int) ([]T, error)
	// SnapshotState stores the current position into the registered state.
	// It runs between two Reads, on the task goroutine.
	SnapshotState(checkpointID int64) error
	// Close releases resources.
	Close() error
}

// FromSource adds a source to the job. newSource is called once per
// subtask (and attempt): every parallel instance has its own Source.
func FromSource[T any](env *Env, newSource func() Source[T]) Stream[T] {
	n := newNode[T](env, "Source", nil, func(int) runtime.Operator { return &sourceOp[T]{src: newSource()} })
	return Stream[T]{env: env, node: n}
}

type sourceOp[T any] struct {
	baseOp
	emitter[T]
	src Source[T]
	ctx *Context
	buf []T
}

func (o *sourceOp[T]) Open(ctx context.Context, oc *runtime.OperatorContext) error {
	o.oc = oc
	o.ctx = newContext(oc)
	o.buf = make([]T, 0, oc.BatchSize)
	return o.src.Open(o.ctx)
}

func (o *sourceOp[T]) Emit(ctx context.Context) (int, error) {
	buf, err := o.src.Read(o.buf[:0], o.oc.BatchSize)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	o.buf = buf
	if perr := o.emit(ctx, buf); perr != nil {
		return 0, perr
	}
	return len(buf), err
}

func (o *sourceOp[T]) SnapshotState(id checkpoint.ID, _ time.Time) (runtime.AsyncSnapshot, error) {
	if err := o.src.SnapshotState(int64(id)); err != nil {
		return nil, fmt.Errorf("source snapshot: %w", err)
	}
	return operatorStateSnapshot(o.ctx)
}

// CheckpointListener is implemented by sources and sinks that want to
// know when a checkpoint completed (e.g. to commit offsets to an external
// system for monitoring). Notifications may be lost; a later id covers the
// earlier ones.
type CheckpointListener interface {
	NotifyCheckpointComplete(checkpointID int64) error
}

func (o *sourceOp[T]) NotifyCheckpointComplete(_ context.Context, id checkpoint.ID) error {
	if l, ok := o.src.(CheckpointListener); ok {
		return l.NotifyCheckpointComplete(int64(id))
	}
	return nil
}

func (o *sourceOp[T]) Close() error {
	if o.ctx == nil {
		return nil // never opened
	}
	return o.src.Close()
}

// operatorStateSnapshot captures a function's operator state synchronously
// (it is small by contract) and returns it from the asynchronous part.
func operatorStateSnapshot(c *Context) (runtime.AsyncSnapshot, error) {
	m, err := c.ops.Snapshot()
	if err != nil {
		return nil, err
	}
	return func(context.Context, runtime.StateWriter) (checkpoint.OperatorSubtaskState, error) {
		return checkpoint.OperatorSubtaskState{UID: c.oc.UID, Operator: m}, nil
	}, nil
}
