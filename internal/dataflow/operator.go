package dataflow

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// Operator is one link of an operator chain, as the task drives it. All
// methods are called from the task goroutine only, except the AsyncSnapshot
// a SnapshotState returns, which runs on another goroutine.
type Operator interface {
	// Open restores state (oc.Restored) and opens the user function.
	Open(ctx context.Context, oc *OperatorContext) error
	// SnapshotState is the synchronous part of checkpoint id: it must be
	// short (capture copy-on-write views, pre-commit a sink transaction) and
	// hand serialization and writing to the returned AsyncSnapshot. ctx is
	// the task's: cancelled when the task is, so that a user call behind
	// it (a sink's flush) stops waiting.
	SnapshotState(ctx context.Context, id checkpoint.ID, ts time.Time) (AsyncSnapshot, error)
	// NotifyCheckpointComplete tells that checkpoint id (and so every older
	// one) is durable. Notifications may be lost: a later id covers earlier.
	NotifyCheckpointComplete(ctx context.Context, id checkpoint.ID) error
	// NotifyCheckpointAborted tells that checkpoint id will never complete.
	NotifyCheckpointAborted(id checkpoint.ID) error
	// EndInput is called once all input has been consumed; the operator
	// emits whatever it buffered.
	EndInput(ctx context.Context) error
	// Close releases resources. It is called on success and on failure,
	// and must tolerate both. ctx is the context the task was run with:
	// cancelled when the task was cancelled from outside (a failover, a
	// cancelled job), not when the task ended on its own, so that a
	// finished or failed task's sinks can still abort what they left open.
	Close(ctx context.Context) error
}

// AsyncSnapshot is the asynchronous part of an operator snapshot.
type AsyncSnapshot func(ctx context.Context, w StateWriter) (checkpoint.OperatorSubtaskState, error)

// StateWriter writes one named state file of the current checkpoint.
type StateWriter interface {
	WriteFile(ctx context.Context, name string, write func(w io.Writer) error) (checkpoint.StateFile, error)
}

// OutputSetter is implemented by operators that emit records: the task
// hands them their typed output (an Output[T]) at deployment.
type OutputSetter interface {
	SetOutput(out any) error
}

// SideOutputSetter is implemented by operators with side outputs
// (OutputTag): the task hands them, per tag with consumers, the combined
// output the tag's records go to (made by the side output's
// OutputFactories.Combine).
type SideOutputSetter interface {
	SetSideOutput(tag string, out any) error
}

// Output receives batches of records: the next chained operator or a
// network writer. ts is nil when the records carry no event timestamps,
// else ts[i] is batch[i]'s (network.NoTimestamp for one without). Neither
// slice may be kept after Push returns: producers reuse them.
type Output[T any] interface {
	Push(ctx context.Context, batch []T, ts []int64) error
}

// SourceOperator is the head of a source task.
type SourceOperator interface {
	Operator
	// Emit reads one batch from the source and pushes it downstream. It
	// returns io.EOF once the (bounded) input is exhausted.
	Emit(ctx context.Context) (n int, err error)
}

// TimerOperator is implemented by operators with processing-time timers.
type TimerOperator interface {
	// NextTimer returns the earliest registered timer (unix millis).
	NextTimer() (int64, bool)
	// FireTimers fires every timer due at now (unix millis).
	FireTimers(ctx context.Context, now int64) error
}

// OperatorContext is what an operator learns about its place in the job.
type OperatorContext struct {
	// JobName is the job's name (its folder in checkpoint storage).
	JobName        string
	Task           checkpoint.TaskID
	UID            string
	Name           string
	Subtask        int
	Parallelism    int
	MaxParallelism int
	// KeyGroups is the subtask's key-group range.
	KeyGroups keygroup.Range
	// Attempt counts restarts of the job in this process, from 0.
	Attempt int
	// Restored is nil on a fresh start.
	Restored *RestoredState
	// BatchSize is the number of records per batch an operator should aim
	// for when it emits.
	BatchSize int
	Faults    *faults.Injector
	Logger    *slog.Logger
	// Now is the processing-time clock.
	Now func() time.Time
	// StateBackend is the job's keyed state backend choice.
	StateBackend state.BackendConfig
	// AutoWatermarkInterval is pipeline.auto-watermark-interval: how often
	// the task calls a WatermarkGenerator's OnPeriodicEmit (0: never; the
	// operator then emits after every batch).
	AutoWatermarkInterval time.Duration
	// LateRecordsDropped counts the records the operator dropped as late
	// (numLateRecordsDropped); the task's metric.
	LateRecordsDropped *atomic.Int64
	// Gauges are the task's published gauges (connector figures, exported
	// with the task's metrics); nil when an operator is driven without a
	// task, in unit tests.
	Gauges GaugeSetter
	// Mailbox runs actions on the task goroutine (nil when an operator
	// is driven without a task, in unit tests).
	Mailbox Mailbox
	// Async counts the calls of the task's async I/O operators (the
	// task's metric; nil in unit tests).
	Async *AsyncMetrics
	// Storage is the job's checkpoint storage, for files an operator
	// writes outside a snapshot's asynchronous part (a two-phase-commit
	// sink's transaction blobs, written while it pre-commits); nil when
	// the job has none.
	Storage JobStorage
	// TaskSnapshots says each task snapshots on its own schedule and a
	// failed one restores alone from its own snapshot
	// (WEAKLY_CONSISTENT): state that every subtask holds the same
	// (broadcast state) must then be stored by each, not once.
	TaskSnapshots bool
}

// AsyncMetrics are the counters of a task's async I/O operators, summed
// over its chain: written with atomics by their call goroutines, read by
// the metrics reporters.
type AsyncMetrics struct {
	// Used is set by an async operator's Open: the task reports these.
	Used     atomic.Bool
	InFlight atomic.Int64 // calls running now
	Timeouts atomic.Int64 // calls that timed out
	Retries  atomic.Int64 // attempts after a failed one
	// Calls and LatencyNanos are the completed calls and their summed
	// time, first attempt to completion (retries and backoff included).
	Calls        atomic.Int64
	LatencyNanos atomic.Int64
}

// Mailbox is how work that completes on another goroutine (an async I/O
// call) re-enters its task: Execute queues fn as a control message of the
// task's mailbox, and the task runs it between two batches, on its own
// goroutine, so the operator sees no concurrent calls and may emit
// records. Execute never blocks; an error from fn fails the task. It is
// a control-rate path (a lock and a wake-up per call): an operator posts
// one action per batch of completions, not one per record.
type Mailbox interface {
	Execute(fn func(ctx context.Context) error)
}

// RestoredState is an operator's share of the checkpoint it restores from.
type RestoredState struct {
	Checkpoint checkpoint.ID
	// Keyed holds the blocks of every old subtask whose key groups overlap
	// this subtask's range.
	Keyed []state.RestoreSource
	// Operator is the non-keyed list state, already redistributed if the
	// parallelism changed.
	Operator map[string][][]byte
	// Incremental holds the store handles (incremental checkpoint of the
	// LSM backend) of every old subtask whose key groups overlap this
	// subtask's range; the backend fetches their files through Files.
	Incremental []*checkpoint.IncrementalKeyedStateHandle
	// Files reads the checkpoint's files, verifying each.
	Files FileSource
	// OwnShared is true when the checkpoint belongs to this job's storage,
	// so that its shared files may be referenced by new checkpoints.
	OwnShared bool
	// Schemas is the operator's state table in the checkpoint: the schema
	// each state was written with, which the state backends resolve
	// against the program's types (state.SetKeyedSchemas). Nil for a
	// checkpoint written before schemas were recorded.
	Schemas []checkpoint.StateSchema
	// Blobs are the transaction blobs of every old subtask of the
	// operator (list state moves between subtasks on a rescale), read
	// through Files.
	Blobs []checkpoint.StateFile
	// DropUnrestored is --allow-non-restored-state: keyed states of the
	// checkpoint that the operator no longer registers are dropped
	// instead of failing the restore.
	DropUnrestored bool
}

// GaugeSetter sets a gauge an operator publishes beside its task's
// metrics: name is a Prometheus metric name, labels are key, value pairs.
// It is safe for use from any goroutine.
type GaugeSetter interface {
	Set(name string, v float64, labels ...string)
}
