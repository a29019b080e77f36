package weir

import (
	"context"
	"fmt"
	"reflect"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/state"

	"github.com/weirstream/weir/internal/network"
)

// Two-input operators. A connected stream is two streams of possibly
// different types feeding one operator (Flink's connect): its function
// has one method per input, and both inputs share the operator's state,
// timers and event time (the operator's watermark is the minimum over
// the channels of both inputs). Go has no overloading, so the inputs are
// told apart by name (ProcessElement1, ProcessElement2) and the keyed
// form takes two keyed streams of the same key type K, which the
// compiler checks.

// ConnectedStreams are two streams feeding one two-input operator
// (CoFlatMap). Records of the two inputs interleave in no particular
// order; each input's order is kept.
type ConnectedStreams[A, B any] struct {
	a Stream[A]
	b Stream[B]
}

// Connect connects a and b for a two-input operator (CoFlatMap). To share
// keyed state between them, connect keyed streams with ConnectKeyed.
func Connect[A, B any](a Stream[A], b Stream[B]) ConnectedStreams[A, B] {
	if a.env != b.env {
		a.env.fail(fmt.Errorf("Connect %q and %q: the streams come from different environments", a.node.Name, b.node.Name))
	}
	return ConnectedStreams[A, B]{a: a, b: b}
}

// CoFlatMap applies f1 to the records of the first input and f2 to those
// of the second; both emit into the one output stream. It keeps no state.
func CoFlatMap[A, B, U any](c ConnectedStreams[A, B], f1 func(A, *Collector[U]) error, f2 func(B, *Collector[U]) error) Stream[U] {
	// A two-input operator never chains: rebalance spreads each input
	// evenly whatever the parallelisms (as Union does).
	edges := []dataflow.Edge{{From: c.a.node.ID, Partition: dataflow.Rebalance}, {From: c.b.node.ID, Partition: dataflow.Rebalance}}
	n := newNode[U](c.a.env, "CoFlatMap", edges, func(int) dataflow.Operator {
		o := &coFlatMapOp[A, B, U]{f1: f1, f2: f2}
		o.col.sides = &o.sideOutputs
		return o
	})
	n.SideOutputs = true
	twoInputFactory[A, B](n)
	return Stream[U]{env: c.a.env, node: n}
}

// ConnectedKeyedStreams are two keyed streams of the same key type
// feeding one keyed two-input operator (CoProcess): records of both
// inputs with equal keys reach the same subtask and share that key's
// state and timers.
type ConnectedKeyedStreams[K comparable, A, B any] struct {
	a Keyed[K, A]
	b Keyed[K, B]
}

// ConnectKeyed connects two keyed streams with the same key type (Flink's
// a.connect(b).keyBy(ka, kb)). Both must key by equal values for the
// records that belong together: the key of a record of a and one of b
// are compared with ==.
func ConnectKeyed[K comparable, A, B any](a Keyed[K, A], b Keyed[K, B]) ConnectedKeyedStreams[K, A, B] {
	if a.s.env != b.s.env {
		a.s.env.fail(fmt.Errorf("ConnectKeyed %q and %q: the streams come from different environments", a.s.node.Name, b.s.node.Name))
	}
	return ConnectedKeyedStreams[K, A, B]{a: a, b: b}
}

// KeyedCoProcessFunction processes two keyed streams connected by
// ConnectKeyed, as Flink's KeyedCoProcessFunction: ProcessElement1 takes
// the records of the first input, ProcessElement2 those of the second,
// both with the KeyedContext of the record's key, so keyed state
// registered in Open and timers (processing and event time) are shared by
// the two inputs. State and timers are checkpointed, restored and
// redistributed on rescale as in Process. A function that registers
// timers implements TimerFunction; one that holds resources implements
// Closer.
type KeyedCoProcessFunction[K comparable, A, B, U any] interface {
	// Open registers state and runs once per subtask and attempt, after
	// the state was restored.
	Open(ctx context.Context, kc *KeyedContext[K]) error
	// ProcessElement1 handles one record of the first input.
	ProcessElement1(v A, kc *KeyedContext[K], out *Collector[U]) error
	// ProcessElement2 handles one record of the second input.
	ProcessElement2(v B, kc *KeyedContext[K], out *Collector[U]) error
}

// CoProcess applies a KeyedCoProcessFunction to connected keyed streams.
// newFn is called once per subtask (and attempt).
func CoProcess[K comparable, A, B, U any](c ConnectedKeyedStreams[K, A, B], newFn func() KeyedCoProcessFunction[K, A, B, U]) Stream[U] {
	return coProcess(c, "CoProcess", newFn)
}

func coProcess[K comparable, A, B, U any](c ConnectedKeyedStreams[K, A, B], name string, newFn func() KeyedCoProcessFunction[K, A, B, U]) Stream[U] {
	edges := []dataflow.Edge{
		{From: c.a.s.node.ID, Partition: dataflow.Hash, KeyHash: c.a.recordHash()},
		{From: c.b.s.node.ID, Partition: dataflow.Hash, KeyHash: c.b.recordHash()},
	}
	var n *dataflow.Node
	n = newNode[U](c.a.s.env, name, edges, func(int) dataflow.Operator {
		fn := newFn()
		o := &coProcessOp[K, A, B, U]{keyB: c.b.key, fn2: fn}
		o.processOp = processOp[K, A, U]{key: c.a.key, hash: c.a.hash, intKey: c.a.intKey, fn: coFirst(fn), decls: n.States}
		o.col.sides = &o.sideOutputs
		o.push2 = fn.ProcessElement2
		return o
	})
	n.SideOutputs = true
	n.States = &state.OperatorDeclarations{CheckKey: state.DeclareKey[K]()} // as Process
	twoInputFactory[A, B](n)
	return Stream[U]{env: c.a.s.env, node: n}
}

// coProcessOp is the keyed two-input operator. It is a processOp (state
// backend, restore, snapshots, timers, watermarks, Close) whose function
// takes the first input; the second input goes through the same key
// handling to ProcessElement2, so both share one backend and one timer
// service.
type coProcessOp[K comparable, A, B, U any] struct {
	processOp[K, A, U]
	keyB  func(B) K
	fn2   KeyedCoProcessFunction[K, A, B, U]
	push2 func(B, *KeyedContext[K], *Collector[U]) error // fn2.ProcessElement2, bound once
}

func (o *coProcessOp[K, A, B, U]) Push1(ctx context.Context, batch []A, ts []int64) error {
	return o.processOp.Push(ctx, batch, ts)
}

func (o *coProcessOp[K, A, B, U]) Push2(ctx context.Context, batch []B, ts []int64) error {
	return pushKeyed(ctx, &o.processOp, batch, ts, o.keyB, o.push2, " of the second input")
}

// firstInput presents a keyed two-input function (a
// KeyedCoProcessFunction, a KeyedBroadcastProcessFunction) as the
// KeyedProcessFunction of its first input, for processOp: fn's Open and
// its first input's method, bound once; OnTimer and Close forward to fn's
// own, if it has them.
type firstInput[K comparable, T, U any] struct {
	fn      any
	open    func(context.Context, *KeyedContext[K]) error
	process func(T, *KeyedContext[K], *Collector[U]) error
}

// coFirst is a KeyedCoProcessFunction's first input.
func coFirst[K comparable, A, B, U any](fn KeyedCoProcessFunction[K, A, B, U]) firstInput[K, A, U] {
	return firstInput[K, A, U]{fn: fn, open: fn.Open, process: fn.ProcessElement1}
}

func (f firstInput[K, T, U]) Open(ctx context.Context, kc *KeyedContext[K]) error {
	return f.open(ctx, kc)
}

func (f firstInput[K, T, U]) ProcessElement(v T, kc *KeyedContext[K], out *Collector[U]) error {
	return f.process(v, kc, out)
}

func (f firstInput[K, T, U]) OnTimer(ts int64, kc *KeyedContext[K], out *Collector[U]) error {
	t, ok := f.fn.(TimerFunction[K, U])
	if !ok {
		return fmt.Errorf("function %T registered a%s timer but has no OnTimer method (weir.TimerFunction)", f.fn, kc.domain.article())
	}
	return t.OnTimer(ts, kc, out)
}

func (f firstInput[K, T, U]) Close(ctx context.Context) error { return closeFn(ctx, f.fn) }

// coFlatMapOp is the stateless two-input operator.
type coFlatMapOp[A, B, U any] struct {
	baseOp
	emitter[U]
	sideOutputs
	f1  func(A, *Collector[U]) error
	f2  func(B, *Collector[U]) error
	col Collector[U]
}

func (o *coFlatMapOp[A, B, U]) Push1(ctx context.Context, batch []A, ts []int64) error {
	return flatMapBatch(ctx, o, batch, ts, o.f1)
}

func (o *coFlatMapOp[A, B, U]) Push2(ctx context.Context, batch []B, ts []int64) error {
	return flatMapBatch(ctx, o, batch, ts, o.f2)
}

func flatMapBatch[A, B, T, U any](ctx context.Context, o *coFlatMapOp[A, B, U], batch []T, ts []int64, f func(T, *Collector[U]) error) error {
	o.col.reset(ts != nil)
	for i, v := range batch {
		if ts != nil {
			o.col.cur = ts[i]
		}
		if err := f(v, &o.col); err != nil {
			return err
		}
	}
	if err := o.emit(ctx, o.col.buf, o.col.times()); err != nil {
		return err
	}
	return o.flushSides(ctx)
}

// twoInputs is a two-input operator: one Push per input type.
type twoInputs[A, B any] interface {
	Push1(ctx context.Context, batch []A, ts []int64) error
	Push2(ctx context.Context, batch []B, ts []int64) error
}

// twoInputFactory fills the adapters from gate buffers to a two-input
// node: the runtime hands the batches of the node's first input edge to
// Push1 and those of its second to Push2.
func twoInputFactory[A, B any](n *dataflow.Node) {
	n.InputsOf = func(op dataflow.Operator) ([]dataflow.InputFunc, error) {
		o, ok := op.(twoInputs[A, B])
		if !ok {
			return nil, fmt.Errorf("operator %T does not take %s and %s records", op, reflect.TypeFor[A](), reflect.TypeFor[B]())
		}
		return []dataflow.InputFunc{batchInput(o.Push1), batchInput(o.Push2)}, nil
	}
}

func batchInput[T any](push func(context.Context, []T, []int64) error) dataflow.InputFunc {
	return func(ctx context.Context, data any) (int, error) {
		b := data.(*network.Batch[T])
		n := len(b.Records)
		err := push(ctx, b.Records, b.Times)
		b.Recycle()
		return n, err
	}
}
