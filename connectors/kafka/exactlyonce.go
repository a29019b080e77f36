package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/internal/badrecords"
)

// ExactlyOnce returns a factory of exactly-once Kafka sinks for
// weir.SinkToTransactional. serialize fills a record (Value, Key, Headers;
// the sink sets Topic) for each value; its error fails the job for good,
// naming the sink, the topic and the value's index in its batch, unless
// WithSkipSerializeErrors skips and counts such values.
//
// Each subtask writes one Kafka transaction per checkpoint, on a
// transactional id from its own pool ("<prefix>-<uid>-<subtask>-<k>", k <
// WithPoolSize). At the barrier the transaction is flushed (pre-commit; no
// EndTxn yet); when the checkpoint completes it is committed with an EndTxn
// carrying the producer id and epoch stored in the handle, which works from
// a later attempt or process too. Open fences every id of the pool that the
// restored checkpoint does not hold, which aborts what a crashed attempt
// left open; the operator then commits and aborts the restored ones.
func ExactlyOnce[T any](brokers []string, topic string, serialize func(T, *kgo.Record) error, opts ...Option) func() weir.TwoPhaseCommitSink[T, *Txn] {
	o := apply(opts)
	return func() weir.TwoPhaseCommitSink[T, *Txn] {
		return &eoSink[T]{brokers: brokers, topic: topic, serialize: serialize, o: o}
	}
}

// liveTxn is a transaction begun by this sink instance and not yet
// pre-committed or aborted: it has a producing client.
type liveTxn struct {
	k        int
	cl       *kgo.Client
	produced int64
	bytes    int64 // key, value and header bytes produced

	mu  sync.Mutex
	err error // first produce failure, set by promises
}

func (l *liveTxn) promise(_ *kgo.Record, err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
}

func (l *liveTxn) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

type eoSink[T any] struct {
	brokers   []string
	topic     string
	serialize func(T, *kgo.Record) error
	o         options

	uid          string
	subtask, par int
	log          *slog.Logger
	admin        *kgo.Client
	pool         *pool
	slotOf       map[string]int // transactional id -> pool index
	live         map[*Txn]*liveTxn
	bad          *badrecords.Serialize
}

func (s *eoSink[T]) Open(ctx context.Context, rc *weir.RuntimeContext, restored []*Txn) error {
	return s.open(ctx, rc.UID(), rc.Subtask(), rc.Parallelism(), rc.Logger(), restored)
}

// open is Open without the engine's RuntimeContext, for tests.
func (s *eoSink[T]) open(ctx context.Context, uid string, subtask, parallelism int, log *slog.Logger, restored []*Txn) error {
	s.uid, s.subtask, s.par, s.log = uid, subtask, parallelism, log
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := s.o.validateSink(); err != nil {
		return weir.Unrecoverable(fmt.Errorf("kafka sink %q: %w", s.uid, err))
	}
	bad, err := newSerializeErrors(s.o, s.uid, s.topic, s.subtask, s.log)
	if err != nil {
		return err
	}
	s.bad = bad
	admin, err := kgo.NewClient(append(slices.Clone(s.o.clientOps), kgo.SeedBrokers(s.brokers...))...)
	if err != nil {
		return fmt.Errorf("kafka sink %q: client: %w", s.uid, err)
	}
	s.admin = admin
	s.pool = newPool(s.o.prefix, s.uid, s.subtask, s.o.poolSize)
	s.slotOf = make(map[string]int, s.o.poolSize)
	s.live = map[*Txn]*liveTxn{}
	for k, sl := range s.pool.slots {
		s.slotOf[sl.id] = k
	}
	held := map[string]bool{}
	oldPar := s.par
	for _, t := range restored {
		if t == nil {
			continue
		}
		held[t.TransactionalID] = true
		oldPar = max(oldPar, t.Parallelism)
		if k, ok := s.slotOf[t.TransactionalID]; ok {
			s.pool.slots[k].state = slotRestored
		}
	}
	// Fence the ids the checkpoint does not hold: this subtask's, and those
	// of subtasks that no longer exist after a scale-in (old subtask q goes
	// to q mod p, as the runtime deals out the sink's checkpointed state).
	// The ids the checkpoint holds are left alone: the operator commits or
	// aborts their transactions right after Open, by producer id and epoch.
	var ids []string
	for _, sl := range s.pool.slots {
		ids = append(ids, sl.id)
	}
	for q := s.par; q < oldPar; q++ {
		if q%s.par == s.subtask {
			for k := 0; k < s.o.poolSize; k++ {
				ids = append(ids, transactionalID(s.o.prefix, s.uid, q, k))
			}
		}
	}
	ids = append(ids, s.lingering(ctx, admin, oldPar)...)
	for _, id := range ids {
		if held[id] {
			continue
		}
		if err := fence(ctx, admin, id, s.o.txnTimeout); err != nil {
			refused := s.timeoutRefused(ctx, id, err)
			// The operator does not Close a sink whose Open failed.
			admin.Close()
			s.admin = nil
			if refused != nil {
				return refused
			}
			return fmt.Errorf("kafka sink %q subtask %d: fence transactional id %s: %w", s.uid, s.subtask, id, err)
		}
	}
	return nil
}

// lingering returns the transactional ids of subtasks at or above
// parallelism known (from the checkpoint's handles: oldPar) that this
// subtask takes over (q mod p == subtask) and a transaction coordinator
// knows: an earlier run at a higher parallelism that ended before its
// first checkpoint, or after the one this run restores, may have left
// transactions open under them, and a read_committed consumer would read
// nothing past them until the broker times them out. It probes subtask
// after subtask until one has no known id. Probing is best effort: a
// broker that refuses it (no DESCRIBE on the ids) is logged and skipped,
// as the transactions then end with their timeout anyway.
func (s *eoSink[T]) lingering(ctx context.Context, admin *kgo.Client, oldPar int) []string {
	var out []string
	q := max(s.par, oldPar)
	q += ((s.subtask-q)%s.par + s.par) % s.par
	for ; ; q += s.par {
		ids := make([]string, s.o.poolSize)
		for k := range ids {
			ids[k] = transactionalID(s.o.prefix, s.uid, q, k)
		}
		known, err := knownIDs(ctx, admin, ids)
		if err != nil {
			s.log.Warn("kafka sink: cannot look for transactions an earlier run at a higher parallelism left open; they end with their timeout, and read_committed consumers wait for them until then",
				"sink", s.uid, "subtask", s.subtask, "probed", q, "err", err)
			return out
		}
		if len(known) == 0 {
			return out
		}
		out = append(out, known...)
	}
}

func (s *eoSink[T]) Begin(ctx context.Context) (*Txn, error) {
	k, err := s.pool.acquire()
	if err != nil {
		return nil, fmt.Errorf("kafka sink %q subtask %d: %w", s.uid, s.subtask, err)
	}
	id := s.pool.slots[k].id
	cl, err := kgo.NewClient(append(slices.Clone(s.o.clientOps),
		kgo.SeedBrokers(s.brokers...),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(s.o.txnTimeout),
		kgo.DefaultProduceTopic(s.topic),
	)...)
	if err != nil {
		s.pool.released(k)
		return nil, fmt.Errorf("kafka sink %q: producer %s: %w", s.uid, id, err)
	}
	// A new client initializes the id again: the epoch moves on, so no
	// earlier producer of this id can write into the new transaction, and
	// the handle knows its producer before anything is written (an abort
	// from a later attempt needs it).
	pid, epoch, err := cl.ProducerID(ctx)
	if err == nil {
		err = cl.BeginTransaction()
	}
	if err != nil {
		cl.Close()
		s.pool.released(k)
		if refused := s.timeoutRefused(ctx, id, err); refused != nil {
			return nil, refused
		}
		return nil, fmt.Errorf("kafka sink %q: begin transaction on %s: %w", s.uid, id, err)
	}
	txn := &Txn{TransactionalID: id, Subtask: s.subtask, Parallelism: s.par, Slot: k, ProducerID: pid, Epoch: epoch}
	s.live[txn] = &liveTxn{k: k, cl: cl}
	return txn, nil
}

func (s *eoSink[T]) Write(ctx context.Context, txn *Txn, batch []T) error {
	lt := s.live[txn]
	if lt == nil {
		return fmt.Errorf("kafka sink %q: write to %v, which is not open", s.uid, txn)
	}
	if err := lt.failure(); err != nil {
		return s.produceError(txn, err)
	}
	for i, v := range batch {
		r := &kgo.Record{Topic: s.topic}
		if err := s.serialize(v, r); err != nil {
			if err := s.bad.Failed(i, len(batch), err); err != nil {
				return err
			}
			continue
		}
		r.Topic = s.topic
		lt.bytes += recordBytes(r)
		lt.cl.Produce(ctx, r, lt.promise)
		lt.produced++
	}
	return nil
}

func (s *eoSink[T]) produceError(txn *Txn, err error) error {
	if isStale(err) {
		return fmt.Errorf("kafka sink %q: produce in %v: %w: another producer initialized this transactional id (a newer attempt, or another job with the same prefix and uid)", s.uid, txn, err)
	}
	return fmt.Errorf("kafka sink %q: produce in %v: %w", s.uid, txn, err)
}

// PreCommit flushes the transaction; it stays open on the broker until
// Commit. The producing client is closed: the commit goes by producer id
// and epoch, from this instance or a later one.
func (s *eoSink[T]) PreCommit(ctx context.Context, txn *Txn) error {
	lt := s.live[txn]
	if lt == nil {
		return fmt.Errorf("kafka sink %q: pre-commit %v, which is not open", s.uid, txn)
	}
	delete(s.live, txn)
	defer lt.cl.Close()
	// A broker that stops acknowledging fails the checkpoint after
	// requestTimeout instead of holding the task (and its barrier).
	fctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := lt.cl.Flush(fctx); err != nil {
		return fmt.Errorf("kafka sink %q: flush %v: %w", s.uid, txn, err)
	}
	if err := lt.failure(); err != nil {
		return s.produceError(txn, err)
	}
	if lt.produced > 0 {
		// The client re-initializes its producer after some errors; a
		// transaction whose records went out under two epochs cannot be
		// committed by one EndTxn.
		pid, epoch, err := lt.cl.ProducerID(ctx)
		if err != nil {
			return fmt.Errorf("kafka sink %q: pre-commit %v: %w", s.uid, txn, err)
		}
		if pid != txn.ProducerID || epoch != txn.Epoch {
			return fmt.Errorf("kafka sink %q: pre-commit %v: the producer changed to %d epoch %d during the transaction: failing the checkpoint so that the transaction is aborted and replayed", s.uid, txn, pid, epoch)
		}
	}
	txn.Empty = lt.produced == 0
	txn.Records, txn.Bytes = lt.produced, lt.bytes
	s.pool.precommitted(lt.k, txn.Empty)
	return nil
}

// Commit ends a pre-committed transaction with a commit. Committing a
// committed transaction succeeds: the broker answers a repeated commit by
// the same producer epoch with success. A commit whose connection failed
// after the request went out is resolved by resending it (see end). A
// transaction the broker aborted fails the job for good with a DATA LOSS
// error wrapping weir.ErrTransactionLost, as the file and postgres sinks'
// lost transactions do (see lost).
func (s *eoSink[T]) Commit(ctx context.Context, txn *Txn) error {
	if txn.Empty {
		s.settleRestored(txn)
		return nil
	}
	_, err := s.end(ctx, txn, true)
	switch {
	case err == nil:
	case isStale(err):
		return s.stale(ctx, txn, err)
	case errors.Is(err, kerr.InvalidTxnState):
		return s.lost(txn, err, "the broker answered that it aborted this pre-committed transaction")
	default:
		return fmt.Errorf("kafka sink %q: commit %v (%s): %w", s.uid, txn, txn.held(), err)
	}
	if k, ok := s.slotOf[txn.TransactionalID]; ok {
		s.pool.committed(k)
	}
	return nil
}

// Abort ends a transaction with an abort. Aborting an aborted or never
// begun transaction succeeds; aborting a committed one fails with
// weir.ErrAlreadyCommitted when the broker still remembers the commit.
func (s *eoSink[T]) Abort(ctx context.Context, txn *Txn) error {
	// The operator aborts the open transaction at Close, which also runs
	// after the task was cancelled: the abort still goes out, so that the
	// broker does not hold the transaction (and block read-committed
	// consumers) until its timeout. Each request is bounded by
	// requestTimeout (endTxn, fence), so a dead broker cannot hold Close.
	ctx = context.WithoutCancel(ctx)
	if lt := s.live[txn]; lt != nil {
		delete(s.live, txn)
		aerr := lt.cl.AbortBufferedRecords(ctx)
		lt.cl.Close()
		if lt.produced > 0 {
			if _, err := s.end(ctx, txn, false); err != nil && !isStale(err) {
				return fmt.Errorf("kafka sink %q: abort %v: %w", s.uid, txn, errors.Join(err, aerr))
			}
		}
		s.pool.released(lt.k)
		return nil
	}
	if txn.Empty {
		s.settleRestored(txn)
		return nil
	}
	version, err := s.end(ctx, txn, false)
	switch {
	case err == nil:
	case isStale(err):
		// The id was initialized again since, which ended the transaction.
		// A later attempt may have begun another one on it (this id was
		// free to that attempt once this abort had run) that no checkpoint
		// holds, and Open left the id alone because the checkpoint names
		// it: fence it now, which aborts whatever is open on it.
		if ferr := fence(ctx, s.admin, txn.TransactionalID, s.o.txnTimeout); ferr != nil {
			return fmt.Errorf("kafka sink %q: abort %v: %w; fence: %w", s.uid, txn, err, ferr)
		}
	case errors.Is(err, kerr.InvalidTxnState):
		committed := version >= 5 // transaction version 2: only a commit by this epoch is answered so
		if !committed {
			c, derr := committedState(ctx, s.admin, txn.TransactionalID, txn.ProducerID, txn.Epoch)
			if derr != nil {
				return fmt.Errorf("kafka sink %q: abort %v: %w; describe: %w", s.uid, txn, err, derr)
			}
			committed = c
		}
		if committed {
			return fmt.Errorf("kafka sink %q: abort %v: %w: %w", s.uid, txn, err, weir.ErrAlreadyCommitted)
		}
	default:
		return fmt.Errorf("kafka sink %q: abort %v: %w", s.uid, txn, err)
	}
	s.settleRestored(txn)
	return nil
}

// settleRestored frees the pool slot of a restored transaction that needed
// no commit.
func (s *eoSink[T]) settleRestored(txn *Txn) {
	if k, ok := s.slotOf[txn.TransactionalID]; ok && s.pool.slots[k].state == slotRestored {
		s.pool.released(k)
	}
}

// Close closes the producing clients. Open transactions are left to the
// operator (which aborts the current one first) and to the next Open.
func (s *eoSink[T]) Close(context.Context) error {
	for txn, lt := range s.live {
		lt.cl.Close()
		delete(s.live, txn)
	}
	if s.admin != nil {
		s.admin.Close()
	}
	return nil
}
