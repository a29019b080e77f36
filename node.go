package weir

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/network"
)

// outputFactories fills the factories the runtime needs for an output
// (a node's main output or a side output) whose records have type Out.
// They run at deployment only; the type assertions here happen once per
// link, never per record.
func outputFactories[Out any](n *dataflow.OutputFactories) {
	n.Combine = func(outs []any) (any, error) {
		typed := make([]dataflow.Output[Out], len(outs))
		for i, o := range outs {
			t, ok := o.(dataflow.Output[Out])
			if !ok {
				return nil, fmt.Errorf("consumer %T does not take %s records", o, reflect.TypeFor[Out]())
			}
			typed[i] = t
		}
		if len(typed) == 1 {
			return typed[0], nil
		}
		return fanout[Out](typed), nil
	}
	n.NewPool = func(batchSize int) any { return network.NewPool[Out](batchSize) }
	n.NewChannelCodec = newChannelCodec[Out]
	n.OutType = typeName(reflect.TypeFor[Out]())
	n.NewWriter = func(chs []network.Sender, e dataflow.Edge, pool any, self, maxParallelism int, recordsOut *atomic.Int64, opts ...network.WriterOption) (dataflow.Writer, error) {
		var p network.Partitioner[Out]
		switch e.Partition {
		case dataflow.Forward:
			p = network.Forward[Out]()
		case dataflow.Rebalance:
			p = network.Rebalance[Out]()
		case dataflow.Broadcast:
			p = network.Broadcast[Out]()
		case dataflow.Hash:
			h, ok := e.KeyHash.(func(Out) uint32)
			if !ok {
				return nil, fmt.Errorf("hash edge key function %T does not take %s records", e.KeyHash, reflect.TypeFor[Out]())
			}
			p = network.Hash(h, maxParallelism)
		default:
			return nil, fmt.Errorf("unknown partitioning %v", e.Partition)
		}
		return writerOutput[Out]{network.NewWriter(chs, p, pool.(*network.Pool[Out]), self, opts...), recordsOut}, nil
	}
}

// typeName names a record type for graph descriptions and messages: by
// package path for named types, so that two packages both called "demo"
// with a type Order stay apart in a job graph's fingerprint.
func typeName(t reflect.Type) string {
	if t.Name() != "" && t.PkgPath() != "" {
		return t.PkgPath() + "." + t.Name()
	}
	return t.String()
}

// inputFactory fills the adapter from gate buffers to a node taking In.
func inputFactory[In any](n *dataflow.Node) {
	n.InputOf = func(op dataflow.Operator) (dataflow.InputFunc, error) {
		o, ok := op.(dataflow.Output[In])
		if !ok {
			return nil, fmt.Errorf("operator %T does not take %s records", op, reflect.TypeFor[In]())
		}
		return func(ctx context.Context, data any) (int, error) {
			b := data.(*network.Batch[In])
			n := len(b.Records)
			err := o.Push(ctx, b.Records, b.Times)
			b.Recycle()
			return n, err
		}, nil
	}
}

// writerOutput makes a network writer an Output of the chain, counting
// the records it sends.
type writerOutput[T any] struct {
	*network.Writer[T]
	out *atomic.Int64
}

func (w writerOutput[T]) Push(ctx context.Context, batch []T, ts []int64) error {
	if w.out != nil {
		w.out.Add(int64(len(batch)))
	}
	return w.EmitBatchTimed(ctx, batch, ts)
}

// fanout pushes each batch to several consumers.
type fanout[T any] []dataflow.Output[T]

func (f fanout[T]) Push(ctx context.Context, batch []T, ts []int64) error {
	for _, o := range f {
		if err := o.Push(ctx, batch, ts); err != nil {
			return err
		}
	}
	return nil
}
