package weir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
)

// Source produces records. Each parallel instance reads its own share of
// the input and keeps its position in operator state, so that after a
// restore it replays exactly the records after the checkpoint. All calls
// come from the task's goroutine; ctx is cancelled when the task is
// cancelled (a failover, a cancelled job), so a call that waits on IO
// should give up when it is.
type Source[T any] interface {
	// Open prepares the instance rc.Subtask() of rc.Parallelism();
	// register the position state here (GetOperatorListState).
	Open(ctx context.Context, rc *RuntimeContext) error
	// Read appends up to max records to dst and returns it. At the end of
	// a bounded input it returns io.EOF (records appended in the same call
	// are still emitted). It may block briefly (rate limits, polling) but
	// should return within milliseconds so checkpoints are not delayed.
	Read(ctx context.Context, dst []T, max int) ([]T, error)
	// SnapshotState stores the current position into the registered state.
	// It runs between two Reads and must not block.
	SnapshotState(checkpointID int64) error
	// Close releases resources. ctx is cancelled only when the task was
	// cancelled; Close runs after a failure too.
	Close(ctx context.Context) error
}

// FromSource adds a source to the job. newSource is called once per
// subtask (and attempt): every parallel instance has its own Source; and
// once while the graph is built, to ask the source for its states
// (StateDeclarer), a value dropped without being opened — so a factory
// should only build the value, and do its I/O in Open.
func FromSource[T any](env *Env, newSource func() Source[T]) Stream[T] {
	n := newNode[T](env, "Source", nil, func(int) dataflow.Operator { return &sourceOp[T]{src: newSource()} })
	n.SideOutputs = true // CollectSourceSide
	return declaredBy(Stream[T]{env: env, node: n}, newSource)
}

// StateDeclarer is implemented by sources that list their states, as
// Stream.Declare does for other operators: a restore then checks them
// against the checkpoint before any task runs, and `savepoint check`
// reports them. The list is the source's whole set of states. The
// connectors of this module (Kafka, files, datagen) implement it.
type StateDeclarer interface {
	DeclareStates() []StateDecl
}

// declaredBy declares the states of the source newSource makes, if it
// says what they are.
func declaredBy[T any](s Stream[T], newSource func() Source[T]) Stream[T] {
	if d, ok := any(newSource()).(StateDeclarer); ok {
		return s.Declare(d.DeclareStates()...)
	}
	return s
}

type sourceOp[T any] struct {
	baseOp
	emitter[T]
	sideOutputs
	src Source[T]
	rc  *RuntimeContext
	buf []T
}

func (o *sourceOp[T]) Open(ctx context.Context, oc *dataflow.OperatorContext) error {
	o.oc = oc
	o.rc = newRuntimeContext(oc)
	o.rc.sides = &o.sideOutputs
	o.buf = make([]T, 0, oc.BatchSize)
	return o.src.Open(ctx, o.rc)
}

func (o *sourceOp[T]) Emit(ctx context.Context) (int, error) {
	buf, err := o.src.Read(ctx, o.buf[:0], o.oc.BatchSize)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	o.buf = buf
	if perr := o.emit(ctx, buf, nil); perr != nil {
		return 0, perr
	}
	// What the Read sent to side outputs goes out before the next barrier,
	// which snapshots the position after it.
	if perr := o.flushSides(ctx); perr != nil {
		return 0, perr
	}
	return len(buf), err
}

func (o *sourceOp[T]) SnapshotState(_ context.Context, id checkpoint.ID, _ time.Time) (dataflow.AsyncSnapshot, error) {
	if err := o.src.SnapshotState(int64(id)); err != nil {
		return nil, fmt.Errorf("source snapshot: %w", err)
	}
	return operatorStateSnapshot(o.rc)
}

// CheckpointListener is implemented by sources and sinks that want to
// know when a checkpoint completed (e.g. to commit offsets to an external
// system for monitoring). Notifications may be lost; a later id covers the
// earlier ones.
type CheckpointListener interface {
	// NotifyCheckpointComplete is called on the task goroutine between
	// two records; ctx is cancelled when the task is.
	NotifyCheckpointComplete(ctx context.Context, checkpointID int64) error
}

func (o *sourceOp[T]) NotifyCheckpointComplete(ctx context.Context, id checkpoint.ID) error {
	if l, ok := o.src.(CheckpointListener); ok {
		return l.NotifyCheckpointComplete(ctx, int64(id))
	}
	return nil
}

func (o *sourceOp[T]) Close(ctx context.Context) error {
	if o.rc == nil {
		return nil // never opened
	}
	return o.src.Close(ctx)
}

// operatorStateSnapshot captures a function's operator state synchronously
// (it is small by contract) and returns it from the asynchronous part.
func operatorStateSnapshot(rc *RuntimeContext) (dataflow.AsyncSnapshot, error) {
	m, err := rc.ops.Snapshot()
	if err != nil {
		return nil, err
	}
	rows := stateRows(rc.ops)
	return func(context.Context, dataflow.StateWriter) (checkpoint.OperatorSubtaskState, error) {
		return checkpoint.OperatorSubtaskState{UID: rc.oc.UID, Operator: m, Schemas: rows}, nil
	}, nil
}
