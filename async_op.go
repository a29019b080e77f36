package weir

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/asyncqueue"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/watermark"
)

// The async operator's operator state: the records in flight at the
// checkpoint, and each subtask's next sequence number (a union, so that
// after a change of parallelism new numbers start above every old one).
const (
	asyncInFlightState = "async-in-flight"
	asyncSeqState      = "async-seq"
)

// asyncEntry is a record in flight as the checkpoint stores it.
type asyncEntry[T any] struct {
	Subtask int // the subtask that numbered it (its idempotency key's)
	// Run is the attempt that numbered it (its idempotency key's): a
	// random number per attempt of a subtask, so that records numbered
	// after a restore never take the key of another record the failed
	// attempt numbered after the checkpoint.
	Run   uint64
	Seq   uint64
	Key   uint64 // the key's hash (AsyncMapKeyed)
	TS    int64  // its event timestamp, if Timed
	Timed bool
	In    T
}

// asyncSeq is one subtask's next sequence number at the checkpoint.
type asyncSeq struct {
	Subtask     int
	Parallelism int
	Next        uint64
}

// asyncIn is a queued record: what the queue gives back to snapshot and
// emit.
type asyncIn[T any] struct {
	in      T
	ts      int64
	subtask int    // of its idempotency key
	run     uint64 // of its idempotency key
	seq     uint64 // of its idempotency key
}

// asyncDone is a call's completion on its way to the task goroutine.
type asyncDone[U any] struct {
	id  uint64 // the record's id in the queue
	ts  int64  // the record's timestamp, which the result keeps
	out U
	err error
}

// asyncOp is the operator of AsyncMap and AsyncMapKeyed. The task
// goroutine owns the queue (internal/asyncqueue) and the output; call
// goroutines only run the user function and hand completions back
// through mu: the first completion after a drain posts one mailbox action
// (dataflow.Mailbox), which takes every completion queued by then, so a
// busy operator pays one wake-up per batch of completions, not per call.
// While the queue is full the task goroutine waits in the operator on
// wake instead (backpressure: it takes no input until a call completes).
type asyncOp[T, U any] struct {
	baseOp
	emitter[U]
	fn    AsyncFunc[T, U]
	cfg   asyncConfig
	keyOf func(T) uint64 // nil unless AsyncMapKeyed

	rc      *RuntimeContext
	entries *OperatorList[asyncEntry[T]]
	seqs    *OperatorList[asyncSeq]
	wmOut   dataflow.WatermarkOutput
	q       *asyncqueue.Queue[asyncIn[T], asyncDone[U]]
	next    uint64 // the next record's sequence number
	// ids number the queued records for the queue: unlike sequence
	// numbers they are unique within the subtask even after a restore
	// into a lower parallelism, where records of several old subtasks
	// (each with its own numbering) meet.
	ids    uint64
	timed  bool
	prefix string                 // "job/uid/" of the idempotency keys
	run    uint64                 // this attempt's part of new records' keys
	m      *dataflow.AsyncMetrics // the task's, shared with its other async operators

	// calls is the context of the call goroutines: it lives from Open to
	// Close (cancelled there, or when the task's context is), which is
	// why it is kept rather than passed.
	calls  context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	done    []asyncDone[U] // guarded by mu
	posted  bool           // guarded by mu: a drain action is in the mailbox
	waiting bool           // guarded by mu: the task goroutine waits on wake
	wake    chan struct{}
	taken   []asyncDone[U] // the task goroutine's, swapped with done

	outs []asyncqueue.Out[asyncDone[U]]
	buf  []U
	ts   []int64
}

func newAsyncOp[T, U any](fn AsyncFunc[T, U], cfg asyncConfig, keyOf func(T) uint64) *asyncOp[T, U] {
	return &asyncOp[T, U]{fn: fn, cfg: cfg, keyOf: keyOf, wake: make(chan struct{}, 1)}
}

func (o *asyncOp[T, U]) SetWatermarkOutput(out dataflow.WatermarkOutput) { o.wmOut = out }

func (o *asyncOp[T, U]) Open(ctx context.Context, oc *dataflow.OperatorContext) error {
	o.oc = oc
	if oc.Mailbox == nil {
		return fmt.Errorf("async operator %q: no task mailbox to deliver completions (run it in a job)", oc.UID)
	}
	o.m = oc.Async
	if o.m == nil {
		o.m = &dataflow.AsyncMetrics{}
	}
	o.m.Used.Store(true)
	o.rc = newRuntimeContext(oc)
	var err error
	if o.entries, err = GetOperatorListState[asyncEntry[T]](o.rc, asyncInFlightState); err != nil {
		return fmt.Errorf("async operator %q: in-flight state: %w", oc.UID, err)
	}
	if o.seqs, err = GetUnionListState[asyncSeq](o.rc, asyncSeqState); err != nil {
		return fmt.Errorf("async operator %q: sequence state: %w", oc.UID, err)
	}
	o.prefix = oc.JobName + "/" + oc.UID + "/"
	o.run = rand.Uint64() | 1 // never 0
	o.q = asyncqueue.New[asyncIn[T], asyncDone[U]](o.cfg.mode, o.cfg.capacity)
	o.calls, o.cancel = context.WithCancel(ctx)
	o.next = o.restoredNext()
	restored := o.entries.Get()
	o.entries.Clear()
	if len(restored) == 0 {
		return nil
	}
	// Re-issue the calls in flight at the checkpoint, in input order and
	// with their own sequence numbers: the service sees the same
	// idempotency keys as before the failure.
	qe := make([]asyncqueue.Entry[asyncIn[T]], len(restored))
	for i, e := range restored {
		qe[i] = asyncqueue.Entry[asyncIn[T]]{Seq: o.ids, Key: e.Key, Input: asyncIn[T]{in: e.In, ts: e.TS, subtask: e.Subtask, run: e.Run, seq: e.Seq}}
		o.ids++
		o.timed = o.timed || e.Timed
	}
	o.q.Restore(qe)
	for _, e := range qe {
		o.start(e.Seq, e.Input)
	}
	return nil
}

// restoredNext is the subtask's first sequence number: its own from the
// checkpoint when the parallelism is unchanged (so replayed records are
// numbered as in the failed run), else above every subtask's.
func (o *asyncOp[T, U]) restoredNext() uint64 {
	var high uint64
	for _, s := range o.seqs.Get() {
		if s.Subtask == o.oc.Subtask && s.Parallelism == o.oc.Parallelism {
			return s.Next
		}
		high = max(high, s.Next)
	}
	return high
}

func (o *asyncOp[T, U]) Push(ctx context.Context, batch []T, ts []int64) error {
	if ts != nil {
		o.timed = true
	}
	for i, v := range batch {
		for o.q.Full() {
			if err := o.awaitCompletion(ctx); err != nil {
				return err
			}
		}
		var key uint64
		if o.keyOf != nil {
			key = o.keyOf(v)
		}
		in := asyncIn[T]{in: v, subtask: o.oc.Subtask, run: o.run, seq: o.next}
		o.next++
		if ts != nil {
			in.ts = ts[i]
		}
		id := o.ids
		o.ids++
		o.q.Add(id, key, in)
		o.start(id, in)
	}
	return nil
}

// start runs the call of queued record id on its own goroutine.
func (o *asyncOp[T, U]) start(id uint64, in asyncIn[T]) {
	o.m.InFlight.Add(1)
	o.wg.Add(1)
	go o.call(id, in)
}

func (o *asyncOp[T, U]) call(id uint64, in asyncIn[T]) {
	defer o.wg.Done()
	begin := time.Now()
	ctx := o.calls
	if o.cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.cfg.timeout)
		defer cancel()
	}
	c := AsyncCall{
		IdempotencyKey: o.prefix + strconv.Itoa(in.subtask) + "/" + strconv.FormatUint(in.run, 16) + "/" + strconv.FormatUint(in.seq, 10),
		Subtask:        in.subtask, Seq: in.seq,
	}
	var out U
	var err error
	p := &o.cfg.retry
	for c.Attempt = 1; ; c.Attempt++ {
		out, err = o.safeCall(ctx, in.in, c)
		if err == nil || ctx.Err() != nil || c.Attempt >= p.MaxAttempts || (p.RetryIf != nil && !p.RetryIf(err)) {
			break
		}
		o.m.Retries.Add(1)
		if !sleepCtx(ctx, p.delay(c.Attempt+1)) {
			break
		}
	}
	if err != nil && o.calls.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		o.m.Timeouts.Add(1)
		err = fmt.Errorf("%w after %v (attempt %d): %w", ErrAsyncTimeout, o.cfg.timeout, c.Attempt, err)
	}
	if err != nil {
		err = fmt.Errorf("call %s: %w", c.IdempotencyKey, err)
	}
	o.m.LatencyNanos.Add(int64(time.Since(begin)))
	o.m.Calls.Add(1)
	o.m.InFlight.Add(-1)
	o.complete(asyncDone[U]{id: id, ts: in.ts, out: out, err: err})
}

// safeCall runs the user function, turning a panic into the task's
// failure instead of the process's.
func (o *asyncOp[T, U]) safeCall(ctx context.Context, v T, c AsyncCall) (out U, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", runtime.ErrUserPanic, r)
		}
	}()
	return o.fn(ctx, v, c)
}

// sleepCtx waits d, or less when ctx ends first (then it returns false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// complete hands a completion to the task goroutine: into done, with one
// mailbox action per batch, and a wake-up if the task waits for room.
func (o *asyncOp[T, U]) complete(d asyncDone[U]) {
	o.mu.Lock()
	o.done = append(o.done, d)
	post := !o.posted
	o.posted = true
	wake := o.waiting
	o.waiting = false
	o.mu.Unlock()
	if wake {
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
	if post {
		o.oc.Mailbox.Execute(o.drainMail)
	}
}

// drainMail is the mailbox action: it takes the completions and emits
// what the queue lets go.
func (o *asyncOp[T, U]) drainMail(ctx context.Context) error {
	o.mu.Lock()
	o.posted = false
	o.mu.Unlock()
	return o.takeCompletions(ctx)
}

// awaitCompletion waits until at least one completion is there (or ctx
// ends), then takes the completions.
func (o *asyncOp[T, U]) awaitCompletion(ctx context.Context) error {
	o.mu.Lock()
	if len(o.done) == 0 {
		o.waiting = true
		o.mu.Unlock()
		select {
		case <-o.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	} else {
		o.mu.Unlock()
	}
	return o.takeCompletions(ctx)
}

func (o *asyncOp[T, U]) takeCompletions(ctx context.Context) error {
	o.mu.Lock()
	o.taken, o.done = o.done, o.taken[:0]
	o.mu.Unlock()
	for i := range o.taken {
		d := &o.taken[i]
		if d.err != nil {
			return fmt.Errorf("async operator %q: %w (handle the error in the function, or retry it with WithAsyncRetry)", o.oc.UID, d.err)
		}
		o.q.Complete(d.id, *d)
	}
	clear(o.taken)
	return o.flush(ctx)
}

// flush emits what the queue lets go: results as batches, each watermark
// after the results before it.
func (o *asyncOp[T, U]) flush(ctx context.Context) error {
	o.outs = o.q.Drain(o.outs[:0])
	buf, ts := o.buf[:0], o.ts[:0]
	for _, out := range o.outs {
		if !out.IsWatermark {
			buf = append(buf, out.Result.out)
			if o.timed {
				ts = append(ts, out.Result.ts)
			}
			continue
		}
		if err := o.emitResults(ctx, buf, ts); err != nil {
			return err
		}
		buf, ts = buf[:0], ts[:0]
		if o.wmOut != nil {
			if err := o.wmOut.EmitWatermark(ctx, out.Watermark); err != nil {
				return err
			}
		}
	}
	err := o.emitResults(ctx, buf, ts)
	clear(buf)
	o.buf, o.ts = buf[:0], ts[:0]
	clear(o.outs)
	return err
}

func (o *asyncOp[T, U]) emitResults(ctx context.Context, buf []U, ts []int64) error {
	if len(buf) == 0 {
		return nil
	}
	if !o.timed {
		ts = nil
	}
	return o.emit(ctx, buf, ts)
}

func (o *asyncOp[T, U]) ProcessWatermark(ctx context.Context, wm int64) (int64, error) {
	o.q.Watermark(wm)
	if err := o.flush(ctx); err != nil {
		return 0, err
	}
	// Emitted (or held) above, through the watermark output.
	return watermark.MinWatermark, nil
}

func (o *asyncOp[T, U]) SnapshotState(_ context.Context, id checkpoint.ID, _ time.Time) (dataflow.AsyncSnapshot, error) {
	snap := o.q.Snapshot(nil)
	entries := make([]asyncEntry[T], len(snap))
	for i, e := range snap {
		entries[i] = asyncEntry[T]{Subtask: e.Input.subtask, Run: e.Input.run, Seq: e.Input.seq, Key: e.Key, TS: e.Input.ts, Timed: o.timed, In: e.Input.in}
	}
	o.entries.Update(entries)
	o.seqs.Update([]asyncSeq{{Subtask: o.oc.Subtask, Parallelism: o.oc.Parallelism, Next: o.next}})
	a, err := operatorStateSnapshot(o.rc)
	if err != nil {
		return nil, fmt.Errorf("async operator %q: checkpoint %d: %w", o.oc.UID, id, err)
	}
	return a, nil
}

// EndInput waits for every call and emits the rest.
func (o *asyncOp[T, U]) EndInput(ctx context.Context) error {
	for o.q.Len() > 0 {
		if err := o.awaitCompletion(ctx); err != nil {
			return err
		}
	}
	return o.flush(ctx)
}

// Close cancels the calls still running and waits for them (they must
// honour their context), so that a failed-over task leaves none behind.
func (o *asyncOp[T, U]) Close(context.Context) error {
	if o.cancel == nil {
		return nil // never opened
	}
	o.cancel()
	waited := make(chan struct{})
	go func() {
		o.wg.Wait()
		close(waited)
	}()
	t := time.NewTimer(asyncCloseGrace)
	defer t.Stop()
	select {
	case <-waited:
	case <-t.C:
		// Never a hang: the task ends, the stuck calls are left behind
		// (their completions go nowhere).
		o.oc.Logger.Warn("async calls still running after their context was cancelled; the function must return when ctx is done",
			"operator", o.oc.UID, "in_flight", o.m.InFlight.Load(), "waited", asyncCloseGrace)
	}
	return nil
}

// asyncCloseGrace is how long Close waits for cancelled calls to return.
const asyncCloseGrace = 10 * time.Second
