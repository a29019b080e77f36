package weir

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/state"
)

// broadcastEntry is one entry of a broadcast state as a checkpoint stores
// it: an element of the operator list state "broadcast/<name>"
// (runtime.BroadcastStatePrefix), which only subtask 0 fills. It is a
// persisted format: its fields (and the type's name, in the state table)
// are in every checkpoint with broadcast state; the golden
// testdata/golden/broadcast-heap-savepoint-v3 holds one.
type broadcastEntry[K comparable, V any] struct {
	Key   K
	Value V
}

// broadcastDecl is a descriptor without its types: open registers the
// state in a subtask's operator backend and restores its map.
type broadcastDecl struct {
	name    string
	declare func() (state.Declared, error)
	open    func(ops *state.OperatorBackend, owner *broadcastStates) (broadcastState, error)
}

// broadcastState is a *BroadcastState[K, V] without its types.
type broadcastState interface {
	// stage puts the map into the operator list state for a snapshot
	// (store), or leaves the list empty (a subtask that stores nothing).
	stage(store bool)
	// unstage empties the list again once the snapshot encoded it: the
	// map is the state, the list only its checkpoint form.
	unstage()
	types() string
}

func (s *BroadcastState[K, V]) stage(store bool) {
	if !store {
		s.list.Clear()
		return
	}
	entries := make([]broadcastEntry[K, V], 0, len(s.m))
	for k, v := range s.m {
		entries = append(entries, broadcastEntry[K, V]{Key: k, Value: v})
	}
	s.list.Update(entries)
}

func (s *BroadcastState[K, V]) unstage() { s.list.Clear() }

func (s *BroadcastState[K, V]) types() string {
	return fmt.Sprintf("a map of %T to %T", *new(K), *new(V))
}

// broadcastStates are one operator subtask's broadcast states. Touched by
// the task goroutine only.
type broadcastStates struct {
	decls  []broadcastDecl
	byName map[string]broadcastState
	all    []broadcastState
	// write is set while ProcessBroadcastElement runs: the only time the
	// function may change broadcast state.
	write bool
	// err is the first change refused outside ProcessBroadcastElement; the
	// operator fails the task with it after the call.
	err error
}

// open registers every declared state in rc's operator backend, restoring
// it, before the function's Open.
func (b *broadcastStates) open(rc *RuntimeContext) error {
	rc.bcast = b
	b.byName = make(map[string]broadcastState, len(b.decls))
	for _, d := range b.decls {
		s, err := d.open(rc.ops, b)
		if err != nil {
			err = fmt.Errorf("operator %q: %w", rc.oc.UID, err)
			if rc.oc.Restored != nil {
				err = restoreFailure(err)
			}
			return err
		}
		b.byName[d.name] = s
		b.all = append(b.all, s)
	}
	return nil
}

// checkRestored runs after the function's Open: a broadcast state the
// checkpoint holds and Broadcast no longer declares is refused, naming it,
// or dropped with --allow-non-restored-state. Carried over, every subtask
// would store it, no longer once.
func (b *broadcastStates) checkRestored(rc *RuntimeContext) error {
	var names []string
	for _, name := range rc.ops.UnrestoredStates() {
		if strings.HasPrefix(name, runtime.BroadcastStatePrefix) {
			names = append(names, strings.TrimPrefix(name, runtime.BroadcastStatePrefix))
		}
	}
	if len(names) == 0 {
		return nil
	}
	r := rc.oc.Restored
	if r.DropUnrestored {
		rc.oc.Logger.Warn("dropping restored state the operator no longer registers (--allow-non-restored-state)", "broadcast_states", names, "checkpoint", r.Checkpoint)
		rc.ops.DropUnrestored()
		return nil
	}
	return runtime.Unrecoverable(fmt.Errorf("checkpoint %d holds broadcast state %q of operator %q that its Broadcast no longer declares: pass the descriptor to Broadcast, or restore with --allow-non-restored-state to drop it", r.Checkpoint, names, rc.oc.UID))
}

// writable reports whether a change of state name is allowed now, and
// records the refusal when it is not: a subtask that changed broadcast
// state while processing its own share of the other input would hold
// another state than its peers, and the one stored copy would be wrong
// for all but one of them.
func (b *broadcastStates) writable(name, op string) bool {
	if b.write {
		return true
	}
	if b.err == nil {
		b.err = runtime.Unrecoverable(fmt.Errorf("broadcast state %q: %s outside ProcessBroadcastElement: broadcast state is read-only while the other input is processed (each subtask sees only its share of it, so the subtasks' states would differ)", name, op))
	}
	return false
}

// stage prepares a snapshot: subtask 0 stores the states, the others
// nothing, since every subtask holds the same (the checkpoint holds them
// once; a restore hands that copy to every subtask). Where each task
// snapshots and restores on its own (WEAKLY_CONSISTENT), a restarted task
// reads only its own snapshot and replays its own input after it, so
// every subtask stores its copy.
func (b *broadcastStates) stage(oc *dataflow.OperatorContext) {
	for _, s := range b.all {
		s.stage(oc.Subtask == 0 || oc.TaskSnapshots)
	}
}

func (b *broadcastStates) unstage() {
	for _, s := range b.all {
		s.unstage()
	}
}

// eachRecord calls f for every record of batch with c and col, the
// record's timestamp in *cur and col, and broadcast state writable when
// write is set. It stops at the first error, or at a refused change of
// broadcast state.
func eachRecord[X, C, U any](bs *broadcastStates, write bool, batch []X, ts []int64, f func(X, C, *Collector[U]) error, c C, cur *int64, col *Collector[U]) error {
	col.reset(ts != nil)
	*cur = NoTimestamp
	bs.write = write
	for i, v := range batch {
		if ts != nil {
			*cur, col.cur = ts[i], ts[i]
		}
		if err := f(v, c, col); err != nil {
			bs.write = false
			return err
		}
		if bs.err != nil {
			bs.write = false
			return bs.err
		}
	}
	bs.write = false
	return nil
}

// keyedBroadcastOp is KeyedBroadcastProcess's operator: a processOp
// (keyed backend, restore, snapshots, timers, watermarks, Close) whose
// function takes the keyed input, plus the broadcast states and the
// broadcast input.
type keyedBroadcastOp[K comparable, T, B, U any] struct {
	processOp[K, T, U]
	fnB   KeyedBroadcastProcessFunction[K, T, B, U]
	bs    broadcastStates
	bctx  KeyedBroadcastContext[K]
	pushB func(B, *KeyedBroadcastContext[K], *Collector[U]) error // fnB.ProcessBroadcastElement, bound once
}

func (o *keyedBroadcastOp[K, T, B, U]) Open(ctx context.Context, oc *dataflow.OperatorContext) error {
	// processOp.Open opens the broadcast states (processOp.bcast) before
	// the function's Open.
	if err := o.processOp.Open(ctx, oc); err != nil {
		return err
	}
	o.bctx = KeyedBroadcastContext[K]{BroadcastContext: BroadcastContext{RuntimeContext: o.kctx.RuntimeContext, ts: NoTimestamp}, kc: &o.kctx}
	// The keyed records go to the function itself, not through
	// firstInput: one call per record, as in Process. A refused
	// change of broadcast state fails the task after the batch
	// (Push1); the job fails for good, so nothing it emitted commits.
	o.process = o.fnB.ProcessElement
	return o.bs.checkRestored(&o.kctx.RuntimeContext)
}

func (o *keyedBroadcastOp[K, T, B, U]) Push1(ctx context.Context, batch []T, ts []int64) error {
	if err := o.processOp.Push(ctx, batch, ts); err != nil {
		return err
	}
	return o.bs.err
}

func (o *keyedBroadcastOp[K, T, B, U]) Push2(ctx context.Context, batch []B, ts []int64) error {
	if err := eachRecord(&o.bs, true, batch, ts, o.pushB, &o.bctx, &o.bctx.ts, &o.col); err != nil {
		return err
	}
	// ApplyToKeyedState may have written keyed state: a failed access
	// fails the task before the output leaves.
	if err := o.backend.Err(); err != nil {
		return err
	}
	if err := o.emit(ctx, o.col.buf, o.col.times()); err != nil {
		return err
	}
	return o.flushSides(ctx)
}

func (o *keyedBroadcastOp[K, T, B, U]) SnapshotState(ctx context.Context, id checkpoint.ID, ts time.Time) (dataflow.AsyncSnapshot, error) {
	return o.SnapshotStateKind(ctx, id, ts, checkpoint.Periodic)
}

// SnapshotStateKind snapshots the keyed state as Process does, with the
// broadcast states in the operator state of subtask 0. The operator state
// is encoded in the synchronous part, so the staged lists are emptied
// again right after.
func (o *keyedBroadcastOp[K, T, B, U]) SnapshotStateKind(ctx context.Context, id checkpoint.ID, ts time.Time, kind checkpoint.Kind) (dataflow.AsyncSnapshot, error) {
	o.bs.stage(o.oc)
	defer o.bs.unstage()
	return o.processOp.SnapshotStateKind(ctx, id, ts, kind)
}

// broadcastOp is BroadcastProcess's operator: a non-keyed two-input
// operator with broadcast states.
type broadcastOp[T, B, U any] struct {
	baseOp
	emitter[U]
	sideOutputs
	fn     BroadcastProcessFunction[T, B, U]
	push1  func(T, *BroadcastContext, *Collector[U]) error // fn.ProcessElement, bound once
	push2  func(B, *BroadcastContext, *Collector[U]) error // fn.ProcessBroadcastElement
	rc     *RuntimeContext
	bs     broadcastStates
	bctx   BroadcastContext
	col    Collector[U]
	opened bool
}

func (o *broadcastOp[T, B, U]) Open(ctx context.Context, oc *dataflow.OperatorContext) error {
	o.oc = oc
	o.rc = newRuntimeContext(oc)
	if err := o.bs.open(o.rc); err != nil {
		return err
	}
	o.bctx = BroadcastContext{RuntimeContext: *o.rc, ts: NoTimestamp}
	o.opened = true
	if err := o.fn.Open(ctx, o.rc); err != nil {
		if oc.Restored != nil {
			err = restoreFailure(fmt.Errorf("operator %q: %w", oc.UID, err))
		}
		return err
	}
	return o.bs.checkRestored(o.rc)
}

func (o *broadcastOp[T, B, U]) Push1(ctx context.Context, batch []T, ts []int64) error {
	return o.push(ctx, eachRecord(&o.bs, false, batch, ts, o.push1, &o.bctx, &o.bctx.ts, &o.col))
}

func (o *broadcastOp[T, B, U]) Push2(ctx context.Context, batch []B, ts []int64) error {
	return o.push(ctx, eachRecord(&o.bs, true, batch, ts, o.push2, &o.bctx, &o.bctx.ts, &o.col))
}

// push emits what a batch collected, unless processing it failed.
func (o *broadcastOp[T, B, U]) push(ctx context.Context, err error) error {
	if err != nil {
		return err
	}
	if err := o.emit(ctx, o.col.buf, o.col.times()); err != nil {
		return err
	}
	return o.flushSides(ctx)
}

func (o *broadcastOp[T, B, U]) SnapshotState(_ context.Context, id checkpoint.ID, _ time.Time) (dataflow.AsyncSnapshot, error) {
	o.bs.stage(o.oc)
	defer o.bs.unstage()
	a, err := operatorStateSnapshot(o.rc)
	if err != nil {
		return nil, fmt.Errorf("operator %q: checkpoint %d: %w", o.oc.UID, id, err)
	}
	return a, nil
}

func (o *broadcastOp[T, B, U]) Close(ctx context.Context) error {
	if !o.opened {
		return nil
	}
	return closeFn(ctx, o.fn)
}

// closeFn closes fn if it is a Closer.
func closeFn(ctx context.Context, fn any) error {
	if cl, ok := fn.(Closer); ok {
		return cl.Close(ctx)
	}
	return nil
}
