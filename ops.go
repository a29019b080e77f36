package weir

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
)

// baseOp gives operators the no-op parts of dataflow.Operator.
type baseOp struct {
	oc *dataflow.OperatorContext
}

func (b *baseOp) Open(_ context.Context, oc *dataflow.OperatorContext) error {
	b.oc = oc
	return nil
}

func (*baseOp) SnapshotState(context.Context, checkpoint.ID, time.Time) (dataflow.AsyncSnapshot, error) {
	return nil, nil
}
func (*baseOp) NotifyCheckpointComplete(context.Context, checkpoint.ID) error { return nil }
func (*baseOp) NotifyCheckpointAborted(checkpoint.ID) error                   { return nil }
func (*baseOp) EndInput(context.Context) error                                { return nil }
func (*baseOp) Close(context.Context) error                                   { return nil }

// emitter holds an operator's typed output. Push implementations must not
// keep the batch they are given after returning: producers reuse it.
type emitter[U any] struct {
	out dataflow.Output[U]
}

func (e *emitter[U]) SetOutput(out any) error {
	o, ok := out.(dataflow.Output[U])
	if !ok {
		return fmt.Errorf("output %T does not take %s records", out, reflect.TypeFor[U]())
	}
	e.out = o
	return nil
}

func (e *emitter[U]) emit(ctx context.Context, batch []U, ts []int64) error {
	if len(batch) == 0 || e.out == nil {
		return nil
	}
	return e.out.Push(ctx, batch, ts)
}

type mapOp[T, U any] struct {
	baseOp
	emitter[U]
	f   func(T) U
	buf []U
}

func (o *mapOp[T, U]) Push(ctx context.Context, batch []T, ts []int64) error {
	buf := o.buf[:0]
	for _, v := range batch {
		buf = append(buf, o.f(v))
	}
	o.buf = buf
	return o.emit(ctx, buf, ts) // one record out per record in: the same timestamps
}

type flatMapOp[T, U any] struct {
	baseOp
	emitter[U]
	sideOutputs
	f   func(T, *Collector[U]) error
	col Collector[U]
}

func (o *flatMapOp[T, U]) Push(ctx context.Context, batch []T, ts []int64) error {
	o.col.reset(ts != nil)
	for i, v := range batch {
		if ts != nil {
			o.col.cur = ts[i]
		}
		if err := o.f(v, &o.col); err != nil {
			return err
		}
	}
	if err := o.emit(ctx, o.col.buf, o.col.times()); err != nil {
		return err
	}
	return o.flushSides(ctx)
}

type filterOp[T any] struct {
	baseOp
	emitter[T]
	keep func(T) bool
	buf  []T
	ts   []int64
}

func (o *filterOp[T]) Push(ctx context.Context, batch []T, ts []int64) error {
	buf := o.buf[:0]
	if ts == nil {
		for _, v := range batch {
			if o.keep(v) {
				buf = append(buf, v)
			}
		}
		o.buf = buf
		return o.emit(ctx, buf, nil)
	}
	kept := o.ts[:0]
	for i, v := range batch {
		if o.keep(v) {
			buf = append(buf, v)
			kept = append(kept, ts[i])
		}
	}
	o.buf, o.ts = buf, kept
	return o.emit(ctx, buf, kept)
}
