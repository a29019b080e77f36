package weir

import (
	"log/slog"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/state"
)

// RuntimeContext tells a source, sink or function where it runs and gives
// it operator (non-keyed) state. It is not a context.Context: the calls
// that can block get one of those as their first argument, cancelled when
// the task is cancelled.
type RuntimeContext struct {
	oc    *dataflow.OperatorContext
	ops   *state.OperatorBackend
	sides *sideOutputs // a source's side outputs (CollectSourceSide); nil elsewhere
	// bcast are the operator's broadcast states; nil unless it reads a
	// broadcast stream (GetBroadcastState).
	bcast *broadcastStates
}

// Subtask is the index of this parallel instance, from 0.
func (rc *RuntimeContext) Subtask() int { return rc.oc.Subtask }

// Parallelism is the number of parallel instances of the operator.
func (rc *RuntimeContext) Parallelism() int { return rc.oc.Parallelism }

// Attempt counts restarts of the job in this process, from 0.
func (rc *RuntimeContext) Attempt() int { return rc.oc.Attempt }

// JobName is the name the job was started with.
func (rc *RuntimeContext) JobName() string { return rc.oc.JobName }

// UID is the operator's stable id.
func (rc *RuntimeContext) UID() string { return rc.oc.UID }

// Restored reports whether the operator starts from a checkpoint.
func (rc *RuntimeContext) Restored() bool { return rc.oc.Restored != nil }

// Logger is the operator's logger.
func (rc *RuntimeContext) Logger() *slog.Logger { return rc.oc.Logger }

// GetOperatorListState registers (or returns) the operator list state
// name, whose elements are redistributed round-robin when the parallelism
// changes. Call it in Open: restored elements are there right away.
func GetOperatorListState[T any](rc *RuntimeContext, name string) (*OperatorList[T], error) {
	cd, err := codec.For[T]()
	if err != nil {
		return nil, err
	}
	l, err := state.RegisterOperatorList(rc.ops, name, cd)
	if err != nil {
		return nil, err
	}
	return &OperatorList[T]{l: l}, nil
}

// GetUnionListState registers (or returns) operator list state name that
// is restored as a union: after a restore every subtask sees the elements
// of all subtasks of the checkpoint, whatever the parallelism, and keeps
// what it needs (Flink's union list state). Sources whose split assignment
// depends on the parallelism (Kafka partitions) use it.
func GetUnionListState[T any](rc *RuntimeContext, name string) (*OperatorList[T], error) {
	return GetOperatorListState[T](rc, runtime.UnionStatePrefix+name)
}

func newRuntimeContext(oc *dataflow.OperatorContext) *RuntimeContext {
	ops := state.NewOperatorBackend()
	if oc.Restored != nil && oc.Restored.Operator != nil {
		ops.SetOperatorSchemas(oc.Restored.Schemas)
		ops.Restore(oc.Restored.Operator)
	}
	return &RuntimeContext{oc: oc, ops: ops}
}
