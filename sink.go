package weir

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/twophase"
)

// Sink writes records out with at-least-once delivery: after a restore,
// records since the last checkpoint are written again. All calls come
// from the task's goroutine; ctx is cancelled when the task is cancelled
// (a failover, a cancelled job), so a call waiting on IO should give up.
type Sink[T any] interface {
	// Open prepares the instance rc.Subtask() of rc.Parallelism().
	Open(ctx context.Context, rc *RuntimeContext) error
	// Write takes one batch; the slice is reused after Write returns.
	Write(ctx context.Context, batch []T) error
	// Flush makes everything written durable; it runs at every checkpoint.
	Flush(ctx context.Context) error
	// Close releases resources. ctx is cancelled only when the task was
	// cancelled; Close runs after a failure too.
	Close(ctx context.Context) error
}

// DataSink is the sink operator SinkTo or SinkToTransactional added: the
// end of its stream. Its methods configure the operator as a Stream's do;
// it has no records to pass on, so, unlike a Stream, no operator can take
// it as input.
type DataSink struct {
	env  *Env
	node *dataflow.Node
}

// Name sets the sink's display name.
func (d DataSink) Name(name string) DataSink {
	d.node.Name = name
	return d
}

// UID sets the sink's stable id, which its state (a two-phase-commit
// sink's transactions, a sink's operator list state) is matched by when a
// job restores; the file sink also uses it in its file names. Give every
// sink one and keep it.
func (d DataSink) UID(uid string) DataSink {
	d.node.UID = uid
	return d
}

// Parallelism sets how many subtasks run the sink.
func (d DataSink) Parallelism(p int) DataSink {
	setParallelism(d.env, d.node, p)
	return d
}

// Declare lists the operator list states the sink registers
// (OperatorListStateOf), as Stream.Declare does for other operators; weir
// declares a two-phase-commit sink's transactions itself.
func (d DataSink) Declare(decls ...StateDecl) DataSink {
	declare(d.env, d.node, decls)
	return d
}

// SinkTo adds an at-least-once sink; newSink is called once per subtask.
func SinkTo[T any](s Stream[T], newSink func() Sink[T]) DataSink {
	n := newNode[T](s.env, "Sink", forward(s.node), func(int) dataflow.Operator { return &sinkOp[T]{sink: newSink()} })
	inputFactory[T](n)
	return DataSink{env: s.env, node: n}
}

type sinkOp[T any] struct {
	baseOp
	sink Sink[T]
	rc   *RuntimeContext
}

func (o *sinkOp[T]) Open(ctx context.Context, oc *dataflow.OperatorContext) error {
	o.oc = oc
	o.rc = newRuntimeContext(oc)
	return o.sink.Open(ctx, o.rc)
}

func (o *sinkOp[T]) Push(ctx context.Context, batch []T, _ []int64) error {
	return o.sink.Write(ctx, batch)
}

func (o *sinkOp[T]) SnapshotState(ctx context.Context, _ checkpoint.ID, _ time.Time) (dataflow.AsyncSnapshot, error) {
	if err := o.sink.Flush(ctx); err != nil {
		return nil, fmt.Errorf("sink flush: %w", err)
	}
	return operatorStateSnapshot(o.rc)
}

func (o *sinkOp[T]) NotifyCheckpointComplete(ctx context.Context, id checkpoint.ID) error {
	if l, ok := o.sink.(CheckpointListener); ok {
		return l.NotifyCheckpointComplete(ctx, int64(id))
	}
	return nil
}

func (o *sinkOp[T]) Close(ctx context.Context) error {
	if o.rc == nil {
		return nil
	}
	return o.sink.Close(ctx)
}

// TwoPhaseCommitSink is a transactional sink driven by the checkpoints, as
// Flink's TwoPhaseCommitSinkFunction: records go into the open transaction;
// at a checkpoint barrier it is pre-committed and its handle goes into the
// checkpoint; once the checkpoint completes it is committed. A restore
// commits the transactions its checkpoint holds and aborts the newer one.
// TXN is a small serializable handle, of the types state values may be
// (GetValueState): a struct of strings and integers is fine. A sink whose
// transactions hold more (records it must publish itself at commit) keeps
// them in checkpoint storage as a BlobSink, and their references in the
// handle. All calls come from
// the task's goroutine; ctx is cancelled when the task is cancelled.
type TwoPhaseCommitSink[T, TXN any] interface {
	// Open prepares the sink instance. restored lists every transaction the
	// restored checkpoint knows (to be committed or aborted right after);
	// anything else this instance left behind is garbage to clean up.
	Open(ctx context.Context, rc *RuntimeContext, restored []TXN) error
	// Begin opens a new transaction: at Open and after every PreCommit.
	Begin(ctx context.Context) (TXN, error)
	// Write adds a batch to the transaction; the slice is reused after.
	Write(ctx context.Context, txn TXN, batch []T) error
	// PreCommit makes the transaction durable and ready to commit. The
	// handle is encoded into the checkpoint after PreCommit returns, so a
	// pointer handle may record what PreCommit learned (e.g. that the
	// transaction is empty).
	PreCommit(ctx context.Context, txn TXN) error
	// Commit makes the transaction visible. It must be idempotent:
	// committing an already committed transaction succeeds.
	Commit(ctx context.Context, txn TXN) error
	// Abort discards the transaction; idempotent. Aborting a transaction
	// that was committed returns an error wrapping ErrAlreadyCommitted.
	// The open transaction is aborted just before Close, with Close's ctx.
	Abort(ctx context.Context, txn TXN) error
	// Close releases resources. ctx is cancelled only when the task was
	// cancelled; Close runs after a failure too.
	Close(ctx context.Context) error
}

// TransactionTimeouter is an optional interface of a TwoPhaseCommitSink
// whose transactions time out on their own: the system it writes to
// aborts a transaction left open longer than TransactionTimeout (Kafka's
// transaction.timeout.ms), pre-committed or not, and a pre-committed
// transaction aborted before its commit is lost output.
//
// SinkToTransactional calls the sink factory once while the graph is
// built, before the job starts, to ask the value it returns for this
// interface; that value is then dropped without Open, so a factory must
// not connect or start anything (do that in Open). The shortest timeout
// of the job's sinks goes to the checkpoint coordinator: while checkpoint storage fails no
// checkpoint completes and no transaction commits, and the job then fails,
// saying why, before an open transaction would outlive the timeout,
// rather than after execution.checkpointing.storage-failure-timeout (see
// docs/guarantees.md). A value of 0 or less declares no timeout.
type TransactionTimeouter interface {
	TransactionTimeout() time.Duration
}

// SinkToTransactional adds an exactly-once two-phase-commit sink; newSink
// is called once per subtask, and once while the graph is built to learn
// whether the sink is a TransactionTimeouter.
func SinkToTransactional[T, TXN any](s Stream[T], newSink func() TwoPhaseCommitSink[T, TXN]) DataSink {
	if tt, ok := newSink().(TransactionTimeouter); ok {
		if d := tt.TransactionTimeout(); d > 0 && (s.env.p.TransactionTimeout == 0 || d < s.env.p.TransactionTimeout) {
			s.env.p.TransactionTimeout = d
		}
	}
	n := newNode[T](s.env, "TwoPhaseCommitSink", forward(s.node), func(int) dataflow.Operator {
		return &twoPhaseOp[T, TXN]{sink: newSink()}
	})
	inputFactory[T](n)
	// The transaction handles are the sink's state: declared, a restore
	// checks the handle type against the one the checkpoint recorded
	// before any task runs, and `savepoint check` reports it. (A handle
	// type without a codec fails in Open with the codec's error.)
	if d, err := state.DeclareTransactionHandles[TXN](twoPhaseStateName); err == nil {
		n.States = &state.OperatorDeclarations{States: []state.Declared{d}}
	}
	return DataSink{env: s.env, node: n}
}

const twoPhaseStateName = "two-phase-commit"

// ErrAlreadyCommitted is wrapped by a TwoPhaseCommitSink's Abort when the
// transaction was committed already. On restore it means the checkpoint is
// older than output the sink made visible, and the job fails rather than
// duplicate that output. Sinks wrap this error rather than declare their
// own (the connectors do), so that errors.Is tests one name whatever the
// sink.
var ErrAlreadyCommitted = errors.New("transaction already committed")

// ErrTransactionLost is wrapped by a TwoPhaseCommitSink's Commit when a
// transaction a completed checkpoint holds is gone: neither pending nor
// committed. Its records cannot be recovered by a restart, so the job fails
// at once, and the loss is counted in the job's numberOfLostTransactions
// metric (alert WeirTransactionLost). As with ErrAlreadyCommitted, sinks
// wrap this error with their own context rather than declare their own.
var ErrTransactionLost = dataflow.ErrTransactionLost

type twoPhaseOp[T, TXN any] struct {
	baseOp
	sink    TwoPhaseCommitSink[T, TXN]
	rc      *RuntimeContext
	tracker *twophase.Tracker[TXN]
	codec   txnCodec[TXN]
	opened  bool
	// blobs is set when the sink is a BlobSink.
	blobs *txnBlobs
}

// txnCodec encodes transaction handles with TXN's codec and decodes them
// with dec: the same codec, or, for handles a checkpoint recorded under
// another schema of the handle type (a connector upgraded between the
// checkpoint and the restore), the decoder that resolves that schema.
type txnCodec[TXN any] struct {
	c   codec.Codec[TXN]
	dec codec.Decoder[TXN]
}

func (t txnCodec[TXN]) Encode(txn TXN) ([]byte, error) { return t.c.Append(nil, txn), nil }

func (t txnCodec[TXN]) Decode(b []byte) (TXN, error) {
	v, n, err := t.dec.Decode(b)
	if err == nil && n != len(b) {
		err = fmt.Errorf("%d trailing bytes after transaction handle: %w", len(b)-n, codec.ErrCorrupt)
	}
	return v, err
}

func (o *twoPhaseOp[T, TXN]) Open(ctx context.Context, oc *dataflow.OperatorContext) error {
	o.oc = oc
	c, err := codec.For[TXN]()
	if err != nil {
		return fmt.Errorf("transaction handle: %w", err)
	}
	o.codec = txnCodec[TXN]{c: c, dec: c}
	o.rc = newRuntimeContext(oc)
	o.tracker = twophase.NewTracker[TXN]()
	if bs, ok := o.sink.(BlobSink); ok {
		o.blobs = newTxnBlobs(oc.Storage)
		if oc.Restored != nil {
			o.blobs.restored(oc.Restored)
		}
		bs.SetTransactionBlobs(o.blobs)
	}
	var commit, abort []TXN
	if oc.Restored != nil {
		dec, err := restoredTxnDecoder[TXN](oc.Restored.Schemas, c)
		if err != nil {
			return restoreFailure(fmt.Errorf("restore transactions of sink %q from checkpoint %d: %w", oc.UID, oc.Restored.Checkpoint, err))
		}
		o.codec.dec = dec
		for _, b := range oc.Restored.Operator[twoPhaseStateName] {
			st, err := twophase.DecodeState(b, o.codec)
			if err != nil {
				return restoreFailure(fmt.Errorf("restore transactions of sink %q from checkpoint %d: %w", oc.UID, oc.Restored.Checkpoint, err))
			}
			c, a := o.tracker.Restore(st)
			commit = append(commit, c...)
			abort = append(abort, a...)
		}
	}
	if err := o.sink.Open(ctx, o.rc, append(append([]TXN(nil), commit...), abort...)); err != nil {
		return err
	}
	o.opened = true
	// The restored checkpoint completed, so its pre-committed transactions
	// are committed now even if the notification was lost; the open
	// transaction it recorded holds records after the barrier: replayed.
	for _, txn := range commit {
		if err := o.sink.Commit(ctx, txn); err != nil {
			err = fmt.Errorf("commit restored transaction %v of checkpoint %d: %w", txn, oc.Restored.Checkpoint, err)
			if errors.Is(err, ErrTransactionLost) {
				return runtime.Unrecoverable(err)
			}
			return err
		}
	}
	for _, txn := range abort {
		if err := o.sink.Abort(ctx, txn); err != nil {
			if errors.Is(err, ErrAlreadyCommitted) {
				// The transaction opened after this checkpoint's barrier was
				// committed by a newer checkpoint, which must have been
				// skipped (corrupt or removed). Replaying from here would
				// commit those records twice.
				return runtime.Unrecoverable(fmt.Errorf("restore from checkpoint %d: sink %q already committed transaction %v, which holds records after this checkpoint: restoring it would duplicate output; restore the newer checkpoint (fix or recover it), or clear the sink's output and start over: %w", oc.Restored.Checkpoint, oc.UID, txn, err))
			}
			return fmt.Errorf("abort restored transaction %v: %w", txn, err)
		}
	}
	if o.blobs != nil && oc.Restored != nil {
		o.blobs.forgetRestored(oc.Restored)
	}
	return o.begin(ctx)
}

func (o *twoPhaseOp[T, TXN]) begin(ctx context.Context) error {
	txn, err := o.sink.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	o.tracker.Begin(txn)
	return nil
}

func (o *twoPhaseOp[T, TXN]) Push(ctx context.Context, batch []T, _ []int64) error {
	txn, _ := o.tracker.Current()
	return o.sink.Write(ctx, txn, batch)
}

func (o *twoPhaseOp[T, TXN]) SnapshotState(ctx context.Context, id checkpoint.ID, _ time.Time) (dataflow.AsyncSnapshot, error) {
	txn, err := o.tracker.PreCommit(id)
	if err != nil {
		return nil, err
	}
	if o.blobs != nil {
		o.blobs.preCommitting(id)
	}
	err = o.sink.PreCommit(ctx, txn)
	if o.blobs != nil {
		o.blobs.preCommitted()
	}
	if err != nil {
		return nil, fmt.Errorf("pre-commit for checkpoint %d: %w", id, err)
	}
	if err := o.begin(ctx); err != nil {
		return nil, err
	}
	st := o.tracker.State()
	b, err := twophase.EncodeState(st, o.codec)
	if err != nil {
		return nil, err
	}
	// The blobs of every transaction the state records, this pre-commit's
	// and those still pending from earlier checkpoints: listed in the
	// checkpoint, they stay in the shared area while it is retained.
	var blobs []checkpoint.StateFile
	if o.blobs != nil {
		ids := make([]checkpoint.ID, len(st.Pending))
		for i, p := range st.Pending {
			ids[i] = p.ID
		}
		blobs = o.blobs.of(ids)
	}
	inj := o.oc.Faults
	uid := o.oc.UID
	return func(context.Context, dataflow.StateWriter) (checkpoint.OperatorSubtaskState, error) {
		// Pre-committed, checkpoint not yet complete: a crash here must
		// abort the transaction on restore (and replay its records).
		if err := inj.Hit(faults.AfterPreCommit); err != nil {
			return checkpoint.OperatorSubtaskState{}, err
		}
		return checkpoint.OperatorSubtaskState{UID: uid, Operator: map[string][][]byte{twoPhaseStateName: {b}}, Blobs: blobs, Schemas: txnRow[TXN]()}, nil
	}, nil
}

func (o *twoPhaseOp[T, TXN]) NotifyCheckpointComplete(ctx context.Context, id checkpoint.ID) error {
	for _, p := range o.tracker.Complete(id) {
		// A crash here leaves the transaction pre-committed in a completed
		// checkpoint: the restore commits it (roll forward).
		if err := o.oc.Faults.Hit(faults.Commit); err != nil {
			return err
		}
		if err := o.sink.Commit(ctx, p.Txn); err != nil {
			err = fmt.Errorf("commit transaction of checkpoint %d: %w", p.ID, err)
			if errors.Is(err, ErrTransactionLost) {
				// A restart would restore this checkpoint and fail the
				// same commit: fail the job now, as a restore does.
				return runtime.Unrecoverable(err)
			}
			return err
		}
	}
	if o.blobs != nil {
		o.blobs.committed(id)
	}
	// After the commits, so a listener sees the checkpoint's output
	// visible.
	if l, ok := o.sink.(CheckpointListener); ok {
		return l.NotifyCheckpointComplete(ctx, int64(id))
	}
	return nil
}

// Close aborts the open transaction, whose records no checkpoint covers.
// Pre-committed ones stay: a completed checkpoint may hold them, and the
// next restore decides.
func (o *twoPhaseOp[T, TXN]) Close(ctx context.Context) error {
	if !o.opened {
		return nil
	}
	var err error
	if txn, ok := o.tracker.Current(); ok {
		err = o.sink.Abort(ctx, txn)
	}
	if cerr := o.sink.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// Unrecoverable marks err as a failure no restart can cure (for example a
// source asked to restore a position it cannot use): the job fails at once
// instead of spending its restart attempts.
func Unrecoverable(err error) error { return runtime.Unrecoverable(err) }
