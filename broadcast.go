package weir

import (
	"context"
	"fmt"
	"iter"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/state"
)

// Broadcast state (Flink's broadcast state pattern). One stream, the
// broadcast side (rules, thresholds, configuration), reaches every subtask
// of an operator; its function keeps what it learns in broadcast state, a
// map per descriptor that every subtask holds the same, and reads it while
// it processes the other input, keyed or not. Since every subtask holds
// the same map, a checkpoint stores it once (subtask 0 writes it), and a
// restore hands that copy to every subtask at any parallelism. The
// operator's task always aligns its barriers, in unaligned checkpoints
// too: that is what makes every subtask snapshot after the same broadcast
// records (docs/architecture.md, "Broadcast state").

// BroadcastStateDescriptor names a broadcast state: a map of K to V held
// the same by every subtask of the operator that reads the broadcast
// stream. Make one with BroadcastStateOf, pass it to Broadcast, and get
// the subtask's handle with GetBroadcastState in the function's Open.
type BroadcastStateDescriptor[K comparable, V any] struct {
	name string
}

// BroadcastStateOf describes the broadcast state name of K to V. K and V
// must be serializable (see GetValueState); the name must stay the same
// across versions of the job, as a keyed state's.
func BroadcastStateOf[K comparable, V any](name string) BroadcastStateDescriptor[K, V] {
	return BroadcastStateDescriptor[K, V]{name: name}
}

// Name is the state's name.
func (d BroadcastStateDescriptor[K, V]) Name() string { return d.name }

// BroadcastStateDecl is any BroadcastStateDescriptor, as Broadcast takes
// them.
type BroadcastStateDecl interface {
	broadcastDecl() broadcastDecl
}

func (d BroadcastStateDescriptor[K, V]) broadcastDecl() broadcastDecl {
	return broadcastDecl{name: d.name, declare: func() (state.Declared, error) {
		return state.DeclareOperatorList[broadcastEntry[K, V]](runtime.BroadcastStatePrefix + d.name)
	}, open: func(ops *state.OperatorBackend, owner *broadcastStates) (broadcastState, error) {
		c, err := codec.For[broadcastEntry[K, V]]()
		if err != nil {
			return nil, fmt.Errorf("broadcast state %q: %w", d.name, err)
		}
		l, err := state.RegisterOperatorList(ops, runtime.BroadcastStatePrefix+d.name, c)
		if err != nil {
			return nil, fmt.Errorf("broadcast state %q: %w", d.name, err)
		}
		s := &BroadcastState[K, V]{name: d.name, owner: owner, list: l, m: make(map[K]V, len(l.Get()))}
		for _, e := range l.Get() {
			s.m[e.Key] = e.Value
		}
		l.Clear()
		return s, nil
	}}
}

// BroadcastStream is a stream whose every record reaches every subtask of
// the operator it feeds, together with the broadcast states that
// operator's function keeps (Flink's BroadcastStream). Feed it to
// KeyedBroadcastProcess or BroadcastProcess.
type BroadcastStream[T any] struct {
	s     Stream[T]
	decls []broadcastDecl
}

// Broadcast makes s a broadcast stream with the broadcast states states
// (Flink's DataStream.broadcast(descriptors…)). Without states it is the
// plain broadcast partitioner: Broadcast(s).Stream() sends every record to
// every subtask of the next operator.
func Broadcast[T any](s Stream[T], states ...BroadcastStateDecl) BroadcastStream[T] {
	b := BroadcastStream[T]{s: s}
	seen := map[string]bool{}
	for _, d := range states {
		bd := d.broadcastDecl()
		if bd.name == "" {
			s.env.fail(fmt.Errorf("Broadcast %q: a broadcast state without a name: give BroadcastStateOf one", s.node.Name))
		}
		if seen[bd.name] {
			s.env.fail(fmt.Errorf("Broadcast %q: broadcast state %q is given twice", s.node.Name, bd.name))
		}
		seen[bd.name] = true
		b.decls = append(b.decls, bd)
	}
	return b
}

// Stream returns the records as a stream that sends every record to every
// subtask of the next operator, without broadcast state.
func (b BroadcastStream[T]) Stream() Stream[T] {
	s := b.s
	n := newNode[T](s.env, "Broadcast", []dataflow.Edge{{From: s.node.ID, Partition: dataflow.Broadcast}}, func(int) dataflow.Operator { return &mapOp[T, T]{f: identity[T]} })
	inputFactory[T](n)
	return Stream[T]{env: s.env, node: n}
}

// BroadcastState is one subtask's handle on a broadcast state: a map of K
// to V. Every subtask holds the same map when the function changes it the
// same way for the same broadcast records, which it must: change it only
// from ProcessBroadcastElement, from the broadcast record and the state
// alone (not from the subtask index, the clock or a random number). In
// ProcessElement the state is read-only: Put, Remove and Clear there fail
// the job. Iteration order is unspecified, as a Go map's.
type BroadcastState[K comparable, V any] struct {
	name  string
	owner *broadcastStates
	m     map[K]V
	list  *state.OperatorList[broadcastEntry[K, V]]
}

// Get returns the value of k.
func (s *BroadcastState[K, V]) Get(k K) (V, bool) {
	v, ok := s.m[k]
	return v, ok
}

// Contains reports whether k has a value.
func (s *BroadcastState[K, V]) Contains(k K) bool {
	_, ok := s.m[k]
	return ok
}

// Len is the number of entries.
func (s *BroadcastState[K, V]) Len() int { return len(s.m) }

// All yields every entry, in no particular order. The state must not
// change during the iteration.
func (s *BroadcastState[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for k, v := range s.m {
			if !yield(k, v) {
				return
			}
		}
	}
}

// Put sets the value of k (ProcessBroadcastElement only).
func (s *BroadcastState[K, V]) Put(k K, v V) {
	if s.owner.writable(s.name, "Put") {
		s.m[k] = v
	}
}

// Remove deletes k (ProcessBroadcastElement only).
func (s *BroadcastState[K, V]) Remove(k K) {
	if s.owner.writable(s.name, "Remove") {
		delete(s.m, k)
	}
}

// Clear deletes every entry (ProcessBroadcastElement only).
func (s *BroadcastState[K, V]) Clear() {
	if s.owner.writable(s.name, "Clear") {
		clear(s.m)
	}
}

// StateContext is where a function registers state: a *RuntimeContext
// or a *KeyedContext.
type StateContext interface {
	runtimeContext() *RuntimeContext
}

func (rc *RuntimeContext) runtimeContext() *RuntimeContext { return rc }

// GetBroadcastState returns the subtask's handle on broadcast state d. Call
// it in the Open of a KeyedBroadcastProcessFunction or a
// BroadcastProcessFunction; d must be one of the descriptors given to
// Broadcast. The state is restored before Open runs.
func GetBroadcastState[K comparable, V any](sc StateContext, d BroadcastStateDescriptor[K, V]) (*BroadcastState[K, V], error) {
	rc := sc.runtimeContext()
	if rc.bcast == nil {
		return nil, fmt.Errorf("broadcast state %q: operator %q reads no broadcast stream: get broadcast state in the functions of KeyedBroadcastProcess and BroadcastProcess", d.name, rc.oc.UID)
	}
	s, ok := rc.bcast.byName[d.name]
	if !ok {
		return nil, fmt.Errorf("broadcast state %q: operator %q's broadcast stream has no such state: pass its descriptor to Broadcast", d.name, rc.oc.UID)
	}
	typed, ok := s.(*BroadcastState[K, V])
	if !ok {
		return nil, fmt.Errorf("broadcast state %q: declared as %s, asked for as a map of %T to %T", d.name, s.types(), *new(K), *new(V))
	}
	return typed, nil
}

// BroadcastContext is the context of a broadcast operator's calls: where
// the subtask runs, and the current record's timestamp.
type BroadcastContext struct {
	RuntimeContext
	ts int64
}

// Timestamp is the event timestamp of the record being processed, and
// false when it has none.
func (bc *BroadcastContext) Timestamp() (int64, bool) { return bc.ts, bc.ts != NoTimestamp }

// CurrentProcessingTime is the wall clock in unix milliseconds (see
// KeyedContext.CurrentProcessingTime).
func (bc *BroadcastContext) CurrentProcessingTime() int64 { return bc.oc.Now().UnixMilli() }

// KeyedBroadcastContext is the context of ProcessBroadcastElement in a
// KeyedBroadcastProcessFunction: the BroadcastContext, the event time, and
// the keyed state of every key of the subtask (ApplyToKeyedState).
// Outside ApplyToKeyedState the current key is whichever was current last
// (of a keyed record, or a visited key): use keyed state only inside
// ApplyToKeyedState; weir does not detect other uses.
type KeyedBroadcastContext[K comparable] struct {
	BroadcastContext
	kc *KeyedContext[K]
}

// CurrentWatermark is the operator's event time (see
// KeyedContext.CurrentWatermark).
func (bc *KeyedBroadcastContext[K]) CurrentWatermark() int64 { return bc.kc.clock.wm }

// ApplyToKeyedState calls fn for every key of this subtask that has an
// entry in the keyed state called name (Flink's applyToKeyedState), with
// that key current: the keyed state handles the function registered in
// Open read and write that key's state in fn, which may change or clear
// it. Every subtask does so for its own keys, so the broadcast record
// reaches every key of the operator. Keys come in no particular order; an
// error from fn stops the iteration and fails the task.
func (bc *KeyedBroadcastContext[K]) ApplyToKeyedState(name string, fn func(key K) error) error {
	b := bc.kc.backend
	for k, kg := range b.Keys(name) {
		b.SetCurrentKey(k, kg)
		if err := fn(k); err != nil {
			return err
		}
	}
	return b.Err()
}

// KeyedBroadcastProcessFunction processes a keyed stream connected with a
// broadcast stream (Flink's KeyedBroadcastProcessFunction).
// ProcessElement takes the keyed records, with the keyed state and timers
// of the record's key and read-only broadcast state; ProcessBroadcastElement
// takes every broadcast record on every subtask, with read-write broadcast
// state and, through ApplyToKeyedState, the keyed state of every key. A
// function that registers timers implements TimerFunction; one that holds
// resources implements Closer.
type KeyedBroadcastProcessFunction[K comparable, T, B, U any] interface {
	// Open registers keyed state (GetValueState, …) and gets the
	// broadcast states' handles (GetBroadcastState); it runs once per
	// subtask and attempt, after the state was restored.
	Open(ctx context.Context, kc *KeyedContext[K]) error
	// ProcessElement handles one record of the keyed input.
	ProcessElement(v T, kc *KeyedContext[K], out *Collector[U]) error
	// ProcessBroadcastElement handles one broadcast record. It must
	// change the broadcast state the same way on every subtask.
	ProcessBroadcastElement(v B, bc *KeyedBroadcastContext[K], out *Collector[U]) error
}

// KeyedBroadcastProcess connects keyed stream k with broadcast stream b
// and applies fn (Flink's keyed.connect(broadcast).process(fn)). newFn is
// called once per subtask and attempt. The broadcast records of one
// producer subtask reach every subtask in their order; those of
// different producer subtasks interleave differently on each, so a
// function whose state depends on that order should read a broadcast
// stream of parallelism 1.
func KeyedBroadcastProcess[K comparable, T, B, U any](k Keyed[K, T], b BroadcastStream[B], newFn func() KeyedBroadcastProcessFunction[K, T, B, U]) Stream[U] {
	if k.s.env != b.s.env {
		k.s.env.fail(fmt.Errorf("KeyedBroadcastProcess %q and %q: the streams come from different environments", k.s.node.Name, b.s.node.Name))
	}
	edges := []dataflow.Edge{
		{From: k.s.node.ID, Partition: dataflow.Hash, KeyHash: k.recordHash()},
		{From: b.s.node.ID, Partition: dataflow.Broadcast},
	}
	var n *dataflow.Node
	n = newNode[U](k.s.env, "KeyedBroadcastProcess", edges, func(int) dataflow.Operator {
		fn := newFn()
		o := &keyedBroadcastOp[K, T, B, U]{fnB: fn}
		o.bs.decls = b.decls
		o.processOp = processOp[K, T, U]{key: k.key, hash: k.hash, intKey: k.intKey, fn: firstInput[K, T, U]{fn: fn, open: fn.Open, process: fn.ProcessElement}, decls: n.States, bcast: &o.bs}
		o.col.sides = &o.sideOutputs
		o.pushB = fn.ProcessBroadcastElement
		return o
	})
	n.SideOutputs = true
	n.AlignedBarriers = true
	n.States = &state.OperatorDeclarations{CheckKey: state.DeclareKey[K]()} // as Process
	declareBroadcast(k.s.env, n, b.decls)
	twoInputFactory[T, B](n)
	return Stream[U]{env: k.s.env, node: n}
}

// BroadcastProcessFunction processes a stream connected with a broadcast
// stream (Flink's BroadcastProcessFunction): ProcessElement takes the
// records of the non-broadcast input with read-only broadcast state,
// ProcessBroadcastElement every broadcast record on every subtask with
// read-write broadcast state. One that holds resources implements Closer.
type BroadcastProcessFunction[T, B, U any] interface {
	// Open gets the broadcast states' handles (GetBroadcastState) and
	// registers operator state; it runs once per subtask and attempt,
	// after the state was restored.
	Open(ctx context.Context, rc *RuntimeContext) error
	// ProcessElement handles one record of the non-broadcast input.
	ProcessElement(v T, bc *BroadcastContext, out *Collector[U]) error
	// ProcessBroadcastElement handles one broadcast record. It must
	// change the broadcast state the same way on every subtask.
	ProcessBroadcastElement(v B, bc *BroadcastContext, out *Collector[U]) error
}

// BroadcastProcess connects s with broadcast stream b and applies fn
// (Flink's stream.connect(broadcast).process(fn)); s's records are spread
// round-robin over the operator's subtasks. newFn is called once per
// subtask and attempt. See KeyedBroadcastProcess on the order of
// broadcast records.
func BroadcastProcess[T, B, U any](s Stream[T], b BroadcastStream[B], newFn func() BroadcastProcessFunction[T, B, U]) Stream[U] {
	if s.env != b.s.env {
		s.env.fail(fmt.Errorf("BroadcastProcess %q and %q: the streams come from different environments", s.node.Name, b.s.node.Name))
	}
	edges := []dataflow.Edge{
		{From: s.node.ID, Partition: dataflow.Rebalance},
		{From: b.s.node.ID, Partition: dataflow.Broadcast},
	}
	n := newNode[U](s.env, "BroadcastProcess", edges, func(int) dataflow.Operator {
		fn := newFn()
		o := &broadcastOp[T, B, U]{fn: fn, push1: fn.ProcessElement, push2: fn.ProcessBroadcastElement}
		o.bs.decls = b.decls
		o.col.sides = &o.sideOutputs
		return o
	})
	n.SideOutputs = true
	n.AlignedBarriers = true
	n.States = &state.OperatorDeclarations{}
	declareBroadcast(s.env, n, b.decls)
	twoInputFactory[T, B](n)
	return Stream[U]{env: s.env, node: n}
}

// declareBroadcast adds the broadcast states to n's declared states: a
// restore checks the checkpoint's broadcast states against their types
// before anything is deployed, as for states the program declares
// (Stream.Declare, which adds the function's own to these).
func declareBroadcast(env *Env, n *dataflow.Node, decls []broadcastDecl) {
	for _, bd := range decls {
		d, err := bd.declare()
		if err != nil {
			env.fail(fmt.Errorf("operator %q: broadcast state %q: %w", n.Name, bd.name, err))
			return
		}
		n.States.States = append(n.States.States, d)
	}
}
