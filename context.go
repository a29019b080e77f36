package weir

import (
	"log/slog"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/state"
)

// Context tells a source or sink function where it runs and gives it
// operator (non-keyed) state.
type Context struct {
	oc  *runtime.OperatorContext
	ops *state.OperatorBackend
}

// Subtask is the index of this parallel instance, from 0.
func (c *Context) Subtask() int { return c.oc.Subtask }

// Parallelism is the number of parallel instances of the operator.
func (c *Context) Parallelism() int { return c.oc.Parallelism }

// Attempt counts restarts of the job in this process, from 0.
func (c *Context) Attempt() int { return c.oc.Attempt }

// JobName is the name the job was executed with.
func (c *Context) JobName() string { return c.oc.JobName }

// UID is the operator's stable id.
func (c *Context) UID() string { return c.oc.UID }

// Restored reports whether the operator starts from a checkpoint.
func (c *Context) Restored() bool { return c.oc.Restored != nil }

// Logger is the operator's logger.
func (c *Context) Logger() *slog.Logger { return c.oc.Logger }

// OperatorList is a checkpointed list of T held per subtask (operator
// state); on a change of parallelism its elements are redistributed
// round-robin. Sources keep their offsets in one.
type OperatorList[T any] = state.OperatorList[T]

// GetOperatorListState registers (or returns) the operator list state name.
// Call it in Open: restored elements are there right away.
func GetOperatorListState[T any](c *Context, name string) (*OperatorList[T], error) {
	cd, err := codec.For[T]()
	if err != nil {
		return nil, err
	}
	return state.RegisterOperatorList(c.ops, name, cd)
}

// GetUnionListState registers (or returns) operator list state name that
// is restored as a union: after a restore every subtask sees the elements
// of all subtasks of the checkpoint, whatever the parallelism, and keeps
// what it needs (Flink's union list state). Sources whose split assignment
// depends on the parallelism (Kafka partitions) use it.
func GetUnionListState[T any](c *Context, name string) (*OperatorList[T], error) {
	return GetOperatorListState[T](c, runtime.UnionStatePrefix+name)
}

func newContext(oc *runtime.OperatorContext) *Context {
	ops := state.NewOperatorBackend()
	if oc.Restored != nil && oc.Restored.Operator != nil {
		ops.Restore(oc.Restored.Operator)
	}
	return &Context{oc: oc, ops: ops}
}
