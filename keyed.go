package weir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"time"
	"unsafe"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/lsm"
)

// Keyed is a stream partitioned by key: all records with the same key go
// to the same subtask, in order, and keyed state is scoped to the key.
type Keyed[K comparable, T any] struct {
	s    Stream[T]
	key  func(T) K
	hash func(K) uint32
	// intKey: hash is keygroup's hash of an 8-byte integer key, which
	// the keyed operator computes inline (hashUint64).
	intKey bool
}

// KeyBy partitions s by key. Keys are hashed stably (the same key maps to
// the same key group in every process); K must be a string, an integer,
// a float or a bool kind, or have a method StableHash() uint32 that
// returns the same value for equal keys in every process and run.
func KeyBy[T any, K comparable](s Stream[T], key func(T) K) Keyed[K, T] {
	h, err := keygroup.Hasher[K]()
	if err != nil {
		s.env.fail(fmt.Errorf("KeyBy after %q: %w", s.node.Name, err))
		h = func(K) uint32 { return 0 }
	}
	return Keyed[K, T]{s: s, key: key, hash: h, intKey: err == nil && keygroup.Uint64Kind[K]()}
}

// KeyedProcessFunction processes a keyed stream record by record with keyed
// state and processing-time timers, as Flink's KeyedProcessFunction. A
// function that registers timers implements TimerFunction too; one that
// holds resources implements Closer.
type KeyedProcessFunction[K comparable, T, U any] interface {
	// Open registers state (GetValueState, …) and runs once per subtask
	// and attempt, after the state was restored. ctx is cancelled when the
	// task is. No key is current in Open: writing keyed state there fails
	// the job, naming the state.
	Open(ctx context.Context, kc *KeyedContext[K]) error
	// ProcessElement handles one record of key kc.CurrentKey(), emitting
	// into out. It runs on the hot path: it should not block.
	ProcessElement(v T, kc *KeyedContext[K], out *Collector[U]) error
}

// TimerFunction is implemented by a KeyedProcessFunction that registers
// timers (KeyedContext.RegisterProcessingTimeTimer,
// RegisterEventTimeTimer). A timer of a function without it fails the task.
type TimerFunction[K comparable, U any] interface {
	// OnTimer runs when a timer of kc.CurrentKey() fires, with the state
	// of that key; kc.TimeDomain() tells which clock it was set on. The
	// records it emits carry the timer's timestamp for an event-time timer
	// and none for a processing-time one (as Flink).
	OnTimer(timestamp int64, kc *KeyedContext[K], out *Collector[U]) error
}

// Closer is implemented by functions that release resources when their
// task ends, on success and on failure. ctx is cancelled only when the
// task was cancelled.
type Closer interface {
	// Close releases what Open acquired; it runs on the task goroutine
	// after the task's last snapshot.
	Close(ctx context.Context) error
}

// KeyedContext gives a KeyedProcessFunction its current key, timers and
// state registration.
type KeyedContext[K comparable] struct {
	RuntimeContext
	backend state.Backend[K]
	timers  *state.Timers[K] // processing time
	events  *state.Timers[K] // event time
	clock   *eventClock
	ts      int64 // the current record's or timer's timestamp
	domain  TimeDomain
	// decls are the operator's declared states (Stream.Declare), which
	// its registrations must match; nil without.
	decls *state.OperatorDeclarations
}

// CurrentKey is the key of the record (or timer) being processed.
func (kc *KeyedContext[K]) CurrentKey() K { return kc.backend.CurrentKey() }

// CurrentProcessingTime is the wall clock in unix milliseconds. In
// WEAKLY_CONSISTENT mode it is the time the task polled the batch being
// processed (or fired the timers), logged with it, so a task restarted
// alone reads again what its failed attempt read; read the time here, not
// from time.Now, for a replay to reproduce a function's output.
func (kc *KeyedContext[K]) CurrentProcessingTime() int64 { return kc.oc.Now().UnixMilli() }

// RegisterProcessingTimeTimer sets a timer for the current key at ts (unix
// milliseconds). Timers are checkpointed with the keyed state.
func (kc *KeyedContext[K]) RegisterProcessingTimeTimer(ts int64) { kc.timers.Register(ts) }

// DeleteProcessingTimeTimer removes the current key's timer at ts.
func (kc *KeyedContext[K]) DeleteProcessingTimeTimer(ts int64) { kc.timers.Delete(ts) }

// RegisterEventTimeTimer sets a timer for the current key that fires when
// the operator's watermark reaches ts (milliseconds of event time).
// Timers are checkpointed with the keyed state; one at or before the
// current watermark fires right after the current record.
func (kc *KeyedContext[K]) RegisterEventTimeTimer(ts int64) { kc.events.Register(ts) }

// DeleteEventTimeTimer removes the current key's event-time timer at ts.
func (kc *KeyedContext[K]) DeleteEventTimeTimer(ts int64) { kc.events.Delete(ts) }

// Timestamp is the event timestamp of the record being processed (in
// OnTimer: the timer's), and false when it has none: the stream has no
// WatermarkStrategy upstream, or a processing-time timer fired.
func (kc *KeyedContext[K]) Timestamp() (int64, bool) {
	return kc.ts, kc.ts != NoTimestamp
}

// CurrentWatermark is the operator's event time: the last watermark it
// processed (MinWatermark before the first).
func (kc *KeyedContext[K]) CurrentWatermark() int64 { return kc.clock.wm }

// TimeDomain tells, in OnTimer, whether an event-time or a
// processing-time timer fired.
func (kc *KeyedContext[K]) TimeDomain() TimeDomain { return kc.domain }

// GetValueState registers (or returns) the value state name. Call it in
// Open. V must be serializable: booleans, integers, floats, strings,
// []byte, time.Time, and structs (exported fields), arrays, slices, maps
// and pointers of those, or a type whose pointer implements
// encoding.BinaryMarshaler and encoding.BinaryUnmarshaler; other types
// (interfaces, channels, functions, unexported fields) are an error. The
// same holds for the values of every other state, and for record types
// that cross between processes.
func GetValueState[V any, K comparable](kc *KeyedContext[K], name string, opts ...StateOption) (ValueState[V], error) {
	c, err := codec.For[V]()
	if err != nil {
		return nil, fmt.Errorf("value state %q: %w", name, err)
	}
	reg, err := kc.declaredOpts(name, opts, func(k state.Kind) string { return fmt.Sprintf("%s of %T", k, *new(V)) }, state.KindValue)
	if err != nil {
		return nil, err
	}
	return state.RegisterValue(kc.backend, name, c, reg...)
}

// GetListState registers (or returns) the list state name.
func GetListState[V any, K comparable](kc *KeyedContext[K], name string, opts ...StateOption) (ListState[V], error) {
	c, err := codec.For[V]()
	if err != nil {
		return nil, fmt.Errorf("list state %q: %w", name, err)
	}
	reg, err := kc.declaredOpts(name, opts, func(k state.Kind) string { return fmt.Sprintf("%s of %T", k, *new(V)) }, state.KindList)
	if err != nil {
		return nil, err
	}
	return state.RegisterList(kc.backend, name, c, reg...)
}

// GetMapState registers (or returns) the map state name.
func GetMapState[UK comparable, UV any, K comparable](kc *KeyedContext[K], name string, opts ...StateOption) (MapState[UK, UV], error) {
	kcd, err := codec.For[UK]()
	if err != nil {
		return nil, fmt.Errorf("map state %q keys: %w", name, err)
	}
	vc, err := codec.For[UV]()
	if err != nil {
		return nil, fmt.Errorf("map state %q values: %w", name, err)
	}
	reg, err := kc.declaredOpts(name, opts, func(k state.Kind) string { return fmt.Sprintf("%s of %T to %T", k, *new(UK), *new(UV)) }, state.KindMap)
	if err != nil {
		return nil, err
	}
	return state.RegisterMap(kc.backend, name, kcd, vc, reg...)
}

// GetReducingState registers (or returns) the reducing state name.
func GetReducingState[V any, K comparable](kc *KeyedContext[K], name string, reduce func(a, b V) V, opts ...StateOption) (ReducingState[V], error) {
	c, err := codec.For[V]()
	if err != nil {
		return nil, fmt.Errorf("reducing state %q: %w", name, err)
	}
	reg, err := kc.declaredOpts(name, opts, func(k state.Kind) string { return fmt.Sprintf("%s of %T", k, *new(V)) }, state.KindReducing)
	if err != nil {
		return nil, err
	}
	return state.RegisterReducing(kc.backend, name, reduce, c, reg...)
}

// declaredOpts returns the registration options of keyed state name:
// opts, or those of its declaration (Stream.Declare) when opts is empty;
// and checks the registration (kind and types as desc names them, with
// the TTL flag the options set) against the declaration.
func (kc *KeyedContext[K]) declaredOpts(name string, opts []StateOption, desc func(state.Kind) string, kind state.Kind) ([]state.RegisterOption, error) {
	reg, err := stateOpts(name, opts)
	if err != nil {
		return nil, err
	}
	reg = kc.decls.OptionsFor(name, reg)
	if ttl, _ := state.DeclarationOptions(reg); ttl {
		kind |= state.KindTTL
	}
	if err := kc.decls.CheckRegistration(name, desc(kind)); err != nil {
		return nil, err
	}
	return reg, nil
}

// Process applies a KeyedProcessFunction to a keyed stream. newFn is called
// once per subtask (and attempt): each parallel instance has its own.
func Process[K comparable, T, U any](k Keyed[K, T], newFn func() KeyedProcessFunction[K, T, U]) Stream[U] {
	edges := []dataflow.Edge{{From: k.s.node.ID, Partition: dataflow.Hash, KeyHash: k.recordHash()}}
	var n *dataflow.Node
	n = newNode[U](k.s.env, "KeyedProcess", edges, func(int) dataflow.Operator {
		// Called at deployment, once the graph (and n.States) is built.
		o := &processOp[K, T, U]{key: k.key, hash: k.hash, intKey: k.intKey, fn: newFn(), decls: n.States}
		o.col.sides = &o.sideOutputs
		return o
	})
	n.SideOutputs = true
	// The engine owns the key: a restore checks the recorded key type of
	// every keyed operator before deploying (Stream.Declare adds the
	// function's states).
	n.States = &state.OperatorDeclarations{CheckKey: state.DeclareKey[K]()}
	inputFactory[T](n)
	return Stream[U]{env: k.s.env, node: n}
}

func (k Keyed[K, T]) recordHash() func(T) uint32 {
	key, hash := k.key, k.hash
	return func(v T) uint32 { return hash(key(v)) }
}

// Reduce folds the records of each key with f and emits the running result
// for every record, as Flink's keyed reduce.
func Reduce[K comparable, T any](k Keyed[K, T], f func(acc, v T) T) Stream[T] {
	s := Process(k, func() KeyedProcessFunction[K, T, T] { return &reduceFunc[K, T]{f: f} })
	s.node.Name = "Reduce"
	return s.Declare(ValueStateOf[T]("reduce"))
}

type reduceFunc[K comparable, T any] struct {
	f   func(acc, v T) T
	acc ValueState[T]
}

func (r *reduceFunc[K, T]) Open(_ context.Context, kc *KeyedContext[K]) (err error) {
	r.acc, err = GetValueState[T](kc, "reduce")
	return err
}

func (r *reduceFunc[K, T]) ProcessElement(v T, _ *KeyedContext[K], out *Collector[T]) error {
	if acc, ok := r.acc.Value(); ok {
		v = r.f(acc, v)
	}
	r.acc.Update(v)
	out.Collect(v)
	return nil
}

type processOp[K comparable, T, U any] struct {
	baseOp
	emitter[U]
	sideOutputs
	key     func(T) K
	hash    func(K) uint32
	intKey  bool // hash is keygroup's for 8-byte integers: see Keyed.intKey
	fn      KeyedProcessFunction[K, T, U]
	decls   *state.OperatorDeclarations // Stream.Declare's, checked at registration
	onTimer TimerFunction[K, U]         // fn, if it has timers
	opened  bool                        // fn.Open was called: Close closes fn
	clock   eventClock
	process func(T, *KeyedContext[K], *Collector[U]) error // fn.ProcessElement, bound once
	kctx    KeyedContext[K]
	col     Collector[U]
	backend state.Backend[K]
	// heap is backend when it is the heap backend: SetCurrentKey on the
	// concrete type can inline, the interface call cannot, so the heap
	// path pays nothing for backends being pluggable; other backends pay
	// one interface call per record.
	heap *state.KeyedBackend[K]
	// lsm is backend when it is the LSM backend (incremental snapshots,
	// keyed_incremental.go).
	lsm  *lsm.Backend[K]
	maxP int
	// kgMod computes key groups without a division (keygroup.Modulus).
	kgMod keygroup.Modulus
	// kgD and kgM are kgMod's constants, for keyGroup.
	kgD, kgM uint64
	kgs      keygroup.Range
	// hashes holds the key hashes of the batch being pushed (pushKeyed),
	// computed in the prefetch pass and reused by the processing loop.
	hashes []uint32
	// touched keeps the bytes Prefetch read, so the loads stay.
	touched uint8
	// bcast are the broadcast states of a KeyedBroadcastProcess, opened
	// before the function's Open; nil for other keyed operators.
	bcast *broadcastStates
}

func (o *processOp[K, T, U]) Open(ctx context.Context, oc *dataflow.OperatorContext) error {
	o.oc = oc
	kc, err := codec.For[K]()
	if err != nil {
		return fmt.Errorf("key type: %w", err)
	}
	o.maxP, o.kgs = oc.MaxParallelism, oc.KeyGroups
	o.kgMod = keygroup.NewModulus(uint32(oc.MaxParallelism))
	o.kgD, o.kgM = o.kgMod.Constants()
	if o.backend, err = newKeyedBackend(kc, oc, o.hash); err != nil {
		return err
	}
	o.heap, _ = o.backend.(*state.KeyedBackend[K])
	o.lsm, _ = o.backend.(*lsm.Backend[K])
	if c, ok := o.backend.(ttlClocked); ok {
		now := oc.Now
		c.SetTTLClock(func() int64 { return now().UnixMilli() })
	}
	if oc.Restored != nil {
		if err := state.SetKeyedSchemas(o.backend, oc.Restored.Schemas); err != nil {
			return restoreFailure(fmt.Errorf("restore keyed state of operator %q from checkpoint %d: %w", oc.UID, oc.Restored.Checkpoint, err))
		}
		if err := o.restoreIncremental(ctx, oc); err != nil {
			return restoreFailure(err)
		}
		if err := o.backend.Restore(ctx, oc.Restored.Keyed); err != nil {
			return restoreFailure(fmt.Errorf("restore keyed state from checkpoint %d: %w", oc.Restored.Checkpoint, err))
		}
	}
	o.kctx = KeyedContext[K]{RuntimeContext: *newRuntimeContext(oc), backend: o.backend, timers: o.backend.Timers(),
		events: o.backend.EventTimers(), clock: &o.clock, ts: NoTimestamp, decls: o.decls}
	if err := o.clock.open(o.kctx.ops); err != nil {
		return err
	}
	if o.bcast != nil {
		if err := o.bcast.open(&o.kctx.RuntimeContext); err != nil {
			return err
		}
	}
	o.onTimer, _ = o.fn.(TimerFunction[K, U])
	o.process = o.fn.ProcessElement
	o.opened = true
	if err := o.fn.Open(ctx, &o.kctx); err != nil {
		if oc.Restored != nil {
			// A state the restored bytes do not fit fails its
			// registration, and the function passes that on.
			err = restoreFailure(fmt.Errorf("operator %q: %w", oc.UID, err))
		}
		return err
	}
	if err := o.backend.Err(); err != nil {
		// No key is current in Open, and the backends refuse keyed state
		// writes without one: a bug in the function that a restart would
		// meet again.
		err = fmt.Errorf("operator %q: %w", oc.UID, err)
		if errors.Is(err, state.ErrNoCurrentKey) {
			err = runtime.Unrecoverable(err)
		}
		return err
	}
	if names := o.backend.UnrestoredStates(); len(names) > 0 {
		if oc.Restored.DropUnrestored {
			oc.Logger.Warn("dropping restored keyed state the function no longer registers (--allow-non-restored-state)", "states", names, "checkpoint", oc.Restored.Checkpoint)
			return o.backend.DropUnrestored()
		}
		return runtime.Unrecoverable(fmt.Errorf("checkpoint %d holds keyed state %q of operator %q that the function did not register in Open: register it in Open, or restore with --allow-non-restored-state to drop it", oc.Restored.Checkpoint, names, oc.UID))
	}
	return nil
}

func (o *processOp[K, T, U]) Push(ctx context.Context, batch []T, ts []int64) error {
	return pushKeyed(ctx, o, batch, ts, o.key, o.process, "")
}

// pushKeyed is the body of the keyed operator's Push, for every keyed
// input: processOp.Push (Process, and through it Reduce and windows; the
// first input of joins and other keyed two-input operators) and
// coProcessOp.Push2, whose records have another type than the operator's
// first input: hence the type parameter T with its own key function.
// Each record sets the current key (a key outside the subtask's key
// groups means a nondeterministic key function), then process handles
// it; the batch's output is emitted, and due event-time timers fire,
// after the batch. input names the input in errors ("" for the first).
func pushKeyed[K comparable, X, T, U any](ctx context.Context, o *processOp[K, X, U], batch []T, ts []int64, key func(T) K, process func(T, *KeyedContext[K], *Collector[U]) error, input string) error {
	o.col.reset(ts != nil)
	o.kctx.ts, o.kctx.domain = NoTimestamp, 0
	prefetch := o.heap != nil && o.heap.PrefetchWorthwhile()
	// The key group and range check are written with this package's
	// helpers (keyGroup) and plain fields: pushKeyed is instantiated in
	// the user's package, where calls from a generic body to another
	// package's small functions (keygroup.Modulus.Group, Range.Contains)
	// are not inlined, a CALL each per record.
	kgD, kgM, kgStart, kgEnd := o.kgD, o.kgM, o.kgs.Start, o.kgs.End
	intKey := o.intKey
	if prefetch {
		// Hash every key first and load the state each will touch: the
		// loads are independent, so their cache misses overlap (see
		// state.KeyedBackend.Prefetch).
		hs := o.hashes[:0]
		var x uint8
		for _, v := range batch {
			h := o.hash(key(v))
			hs = append(hs, h)
			x ^= o.heap.Prefetch(h, keyGroup(h, kgD, kgM))
		}
		o.hashes, o.touched = hs, x
	}
	for i, v := range batch {
		k := key(v)
		var h uint32
		switch {
		case prefetch:
			h = o.hashes[i]
		case intKey:
			h = hashUint64(*(*uint64)(unsafe.Pointer(&k)))
		default:
			h = o.hash(k)
		}
		kg := keyGroup(h, kgD, kgM)
		if kg < kgStart || kg >= kgEnd {
			return fmt.Errorf("key %v (key group %d)%s reached subtask %d which owns key groups %v: the key function must be deterministic", k, kg, input, o.oc.Subtask, o.kgs)
		}
		if o.heap != nil {
			o.heap.SetCurrentKeyHash(k, h, kg) // the tables reuse the hash
		} else {
			o.backend.SetCurrentKey(k, kg)
		}
		if ts != nil {
			o.kctx.ts, o.col.cur = ts[i], ts[i]
		}
		if err := process(v, &o.kctx, &o.col); err != nil {
			return err
		}
	}
	// A state access that failed (disk, corrupt bytes) fails the task
	// before anything the batch computed leaves it.
	if err := o.backend.Err(); err != nil {
		return err
	}
	if err := o.emit(ctx, o.col.buf, o.col.times()); err != nil {
		return err
	}
	if err := o.flushSides(ctx); err != nil {
		return err
	}
	if t, ok := o.kctx.events.Next(); ok && t <= o.clock.wm {
		// Registered at or before the current watermark: due now.
		return o.fireEventTimers(ctx, o.clock.wm)
	}
	return nil
}

// keyGroup is keygroup.Modulus.Group(h) for the Modulus whose constants
// are d and m, written in this package so that it inlines into pushKeyed
// (TestKeyGroupMatchesKeygroup keeps the two the same).
func keyGroup(h uint32, d, m uint64) int {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	hi, _ := bits.Mul64(m*uint64(h), d)
	return int(hi)
}

// hashUint64 is keygroup.Uint64, written in this package so that it
// inlines into pushKeyed (TestHashUint64MatchesKeygroup keeps the two the
// same).
func hashUint64(v uint64) uint32 {
	v ^= v >> 33
	v *= 0xff51afd7ed558ccd
	v ^= v >> 33
	return uint32(v) ^ uint32(v>>32)
}

func (o *processOp[K, T, U]) NextTimer() (int64, bool) { return o.kctx.timers.Next() }

func (o *processOp[K, T, U]) FireTimers(ctx context.Context, now int64) error {
	return o.fire(ctx, o.kctx.timers, now, ProcessingTime)
}

// ProcessWatermark fires the event-time timers up to wm.
func (o *processOp[K, T, U]) ProcessWatermark(ctx context.Context, wm int64) (int64, error) {
	if !o.clock.advance(wm) {
		return wm, nil
	}
	return wm, o.fireEventTimers(ctx, wm)
}

func (o *processOp[K, T, U]) fireEventTimers(ctx context.Context, wm int64) error {
	return o.fire(ctx, o.kctx.events, wm, EventTime)
}

// fire calls OnTimer for every timer of timers due at upTo.
func (o *processOp[K, T, U]) fire(ctx context.Context, timers *state.Timers[K], upTo int64, domain TimeDomain) error {
	if at, ok := timers.Next(); !ok || at > upTo {
		return nil
	}
	if o.onTimer == nil {
		return fmt.Errorf("function %T registered a%s timer but has no OnTimer method (weir.TimerFunction)", o.fn, domain.article())
	}
	o.col.reset(domain == EventTime)
	o.kctx.domain = domain
	var ferr error
	timers.PopDue(upTo, func(k K, kg int, ts int64) {
		if ferr != nil {
			return
		}
		o.backend.SetCurrentKey(k, kg)
		if domain == EventTime {
			o.kctx.ts, o.col.cur = ts, ts
		} else {
			o.kctx.ts = NoTimestamp
		}
		ferr = o.onTimer.OnTimer(ts, &o.kctx, &o.col)
	})
	o.kctx.domain = 0
	if ferr != nil {
		return ferr
	}
	if err := o.backend.Err(); err != nil {
		return err
	}
	if err := o.emit(ctx, o.col.buf, o.col.times()); err != nil {
		return err
	}
	return o.flushSides(ctx)
}

func (o *processOp[K, T, U]) SnapshotState(ctx context.Context, id checkpoint.ID, ts time.Time) (dataflow.AsyncSnapshot, error) {
	return o.SnapshotStateKind(ctx, id, ts, checkpoint.Periodic)
}

// SnapshotStateKind snapshots incrementally when the job asks for it and
// the checkpoint is periodic; savepoints and final checkpoints (which a
// stop with a savepoint copies) are canonical.
func (o *processOp[K, T, U]) SnapshotStateKind(_ context.Context, id checkpoint.ID, _ time.Time, kind checkpoint.Kind) (dataflow.AsyncSnapshot, error) {
	if err := o.backend.Err(); err != nil {
		return nil, err
	}
	if o.lsm != nil && o.oc.StateBackend.Incremental && kind == checkpoint.Periodic {
		return o.snapshotIncremental(id)
	}
	o.clock.snapshot()
	snap := o.backend.Snapshot()
	ops, err := o.kctx.ops.Snapshot()
	if err != nil {
		snap.Release()
		return nil, err
	}
	name := keyedFileName(o.oc.UID, o.oc.Subtask)
	uid := o.oc.UID
	rows := stateRows(o.backend, o.kctx.ops)
	return func(ctx context.Context, w dataflow.StateWriter) (checkpoint.OperatorSubtaskState, error) {
		defer snap.Release()
		var offsets []checkpoint.KeyGroupOffset
		f, err := w.WriteFile(ctx, name, func(wr io.Writer) error {
			var err error
			offsets, err = snap.WriteBlocks(wr)
			return err
		})
		if err != nil {
			return checkpoint.OperatorSubtaskState{}, err
		}
		return checkpoint.OperatorSubtaskState{UID: uid, Keyed: &checkpoint.KeyedStateHandle{File: f, KeyGroups: offsets}, Operator: ops, Schemas: rows}, nil
	}, nil
}

// Close closes the function (if it is a Closer) and the keyed state
// backend (the LSM backend removes its store). The runtime calls it after
// the task's snapshots were written.
func (o *processOp[K, T, U]) Close(ctx context.Context) error {
	if o.backend == nil {
		return nil
	}
	var err error
	if c, ok := o.fn.(Closer); ok && o.opened {
		err = c.Close(ctx)
	}
	if berr := o.backend.Close(); err == nil {
		err = berr
	}
	o.backend, o.heap = nil, nil
	return err
}

// newKeyedBackend makes the keyed state backend the job chose.
// newKeyedBackend makes the operator's backend; hash is the operator's key
// hash, which the heap backend's tables share (SetCurrentKeyHash).
func newKeyedBackend[K comparable](kc codec.Codec[K], oc *dataflow.OperatorContext, hash func(K) uint32) (state.Backend[K], error) {
	switch oc.StateBackend.Type {
	case "", config.BackendHeap:
		return state.NewHashedKeyedBackend(kc, oc.KeyGroups, oc.MaxParallelism, hash), nil
	case config.BackendLSM:
		name := fmt.Sprintf("%s-%d", oc.UID, oc.Subtask)
		opts := lsm.FromConfig(oc.StateBackend.LSM, name, oc.Logger)
		if oc.StateBackend.Incremental && oc.StateBackend.LocalRecovery {
			opts.LocalRecoveryDir = localRecoveryDir(oc)
		}
		return lsm.Open(kc, oc.KeyGroups, oc.MaxParallelism, opts)
	}
	return nil, fmt.Errorf("%s %q: want %q or %q", config.StateBackendType, oc.StateBackend.Type, config.BackendHeap, config.BackendLSM)
}

// keyedFileName names an operator subtask's keyed state file.
func keyedFileName(uid string, subtask int) string {
	return checkpoint.SubtaskFileName(uid, subtask, "keyed")
}

// endOfInputFunc is implemented by functions that fire their
// processing-time timers when a bounded input ends (processing-time
// windows: a window still open at the end of the input fires with what it
// holds instead of being dropped with the job).
type endOfInputFunc interface{ firesProcessingTimersAtEnd() bool }

// EndInput fires, for a function that asks for it, every processing-time
// timer still registered.
func (o *processOp[K, T, U]) EndInput(ctx context.Context) error {
	if f, ok := o.fn.(endOfInputFunc); ok && f.firesProcessingTimersAtEnd() {
		return o.fire(ctx, o.kctx.timers, math.MaxInt64, ProcessingTime)
	}
	return nil
}
