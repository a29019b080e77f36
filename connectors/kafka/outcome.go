package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/weirstream/weir"
)

// TransactionTimeout is the transaction timeout the sink's producers ask
// the broker for (transaction.timeout.ms; kafka.WithTransactionTimeout, 15 min
// by default, where franz-go alone would use 40 s). The broker aborts a
// transaction open longer than that, pre-committed or not: the JobManager
// reads it (weir.TransactionTimeouter) to fail a job whose checkpoints
// cannot complete before the open transactions would outlive it.
func (s *eoSink[T]) TransactionTimeout() time.Duration { return s.o.txnTimeout }

// recordBytes is what a record weighs in the loss report: key, value and
// headers.
func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// unknownOutcome reports an EndTxn error that is not the broker's answer:
// the connection failed (after the request may have been sent), so the
// transaction may or may not have ended. A broker error code, a closed
// client or the caller's cancellation are not unknown outcomes.
func unknownOutcome(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, kgo.ErrClientClosed) {
		return false
	}
	var ke *kerr.Error
	return !errors.As(err, &ke)
}

// end sends EndTxn(commit or abort) for txn by its producer id and epoch
// and returns the broker's answer and the request version.
//
// When the connection fails after the request went out, the outcome is
// unknown: the coordinator may have ended the transaction, or never seen
// the request. franz-go resends the request itself first (RequestRetries);
// if it gives up, end asks the broker by resending the same EndTxn at the
// same producer epoch until it gets an answer, within requestTimeout:
//
//   - the first request ended the transaction: the coordinator answers the
//     resend as the first (success; a Kafka broker completing a
//     PREPARE_COMMIT answers CONCURRENT_TRANSACTIONS until it is done, and
//     endTxn waits that out);
//   - the first request never arrived: the resend ends the transaction now;
//   - the broker aborted the transaction meanwhile: INVALID_TXN_STATE or a
//     fenced epoch, which Commit reports as data loss.
//
// Resending is safe because no other transaction can have begun at this
// producer epoch: every transaction begins on a newly initialized producer
// (epoch bumped), and a committed id rests until a later checkpoint
// completes. The producer is deliberately not initialized again to learn
// the outcome: InitProducerID aborts a transaction still ONGOING, which is
// what a commit that never reached the broker leaves, and that would turn
// a lost connection into lost records.
//
// If no answer comes within requestTimeout, end returns an error that
// says the outcome is unknown; it fails the task, and the restore ends the
// transaction again from the checkpoint's handle.
func (s *eoSink[T]) end(ctx context.Context, txn *Txn, commit bool) (int16, error) {
	version, err := endTxn(ctx, s.admin, txn.TransactionalID, txn.ProducerID, txn.Epoch, commit)
	if !unknownOutcome(ctx, err) {
		return version, err
	}
	what := "abort"
	if commit {
		what = "commit"
	}
	first := err
	s.log.Warn("kafka sink: transaction end has an unknown outcome (the connection failed after the request was sent): asking the broker by resending it at the same producer epoch",
		"uid", s.uid, "subtask", s.subtask, "transactional_id", txn.TransactionalID, "producer_id", txn.ProducerID, "epoch", txn.Epoch,
		"end", what, "err", err)
	deadline := time.Now().Add(s.o.requestTimeout)
	backoff := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return version, fmt.Errorf("%s outcome unknown (%w), and the task was cancelled while resolving it: %w", what, first, ctx.Err())
		case <-t.C:
		}
		version, err = endTxn(ctx, s.admin, txn.TransactionalID, txn.ProducerID, txn.Epoch, commit)
		if !unknownOutcome(ctx, err) {
			result := "done"
			if err != nil {
				result = err.Error()
			}
			s.log.Info("kafka sink: transaction end resolved", "uid", s.uid, "subtask", s.subtask, "transactional_id", txn.TransactionalID,
				"end", what, "resends", attempt, "answer", result)
			return version, err
		}
		if !time.Now().Before(deadline) {
			return version, fmt.Errorf("%s outcome unknown: the connection to the transaction coordinator failed after the EndTxn was sent (%v), and resending it for %v got no answer: %w; failing the task: the restore ends the transaction again from the checkpoint, which is idempotent", what, first, s.o.requestTimeout, err)
		}
		backoff = min(2*backoff, time.Second)
	}
}

// lost reports a pre-committed transaction that the broker aborted before
// its commit: the records of a completed checkpoint are gone, and no
// restart brings them back (the restore would fail the same commit). It
// logs an ERROR, the data-loss alert, and returns an error that fails the
// job for good and wraps weir.ErrTransactionLost. The operator adds the
// checkpoint id to the error.
func (s *eoSink[T]) lost(txn *Txn, err error, why string) error {
	s.log.Error("kafka sink: DATA LOSS: the broker aborted a pre-committed transaction of a completed checkpoint before its commit",
		"uid", s.uid, "subtask", s.subtask, "transactional_id", txn.TransactionalID, "producer_id", txn.ProducerID, "epoch", txn.Epoch,
		"records", txn.Records, "bytes", txn.Bytes, "transaction_timeout", s.o.txnTimeout, "err", err)
	return weir.Unrecoverable(fmt.Errorf("kafka sink %q: DATA LOSS: commit %v: %w: %s; its %s are lost (a completed checkpoint covers them, so no restore writes them again). "+
		"A broker aborts a transaction open longer than its transaction.timeout.ms (%v here): the broker was unreachable, or the commit came late, for longer than that. "+
		"Raise kafka.WithTransactionTimeout above the longest outage the job must survive, and the broker's transaction.max.timeout.ms (default 15 min) to at least as much, since the broker refuses a longer timeout: %w",
		s.uid, txn, err, why, txn.held(), s.o.txnTimeout, weir.ErrTransactionLost))
}

// stale reports a commit refused because the producer epoch moved on. If
// the broker says it aborted the transaction right after this epoch (the
// timeout's abort fences the epoch: Kafka's CompleteAbort at epoch+1), it
// is lost. Otherwise the id was initialized again since, which aborted the
// transaction unless it had been committed before (a restore of an older
// checkpoint than the last): possible data loss, failing the job for good.
func (s *eoSink[T]) stale(ctx context.Context, txn *Txn, err error) error {
	if abortedAfter(ctx, s.admin, txn) {
		return s.lost(txn, err, "the broker aborted this pre-committed transaction and fenced its producer epoch")
	}
	s.log.Error("kafka sink: POSSIBLE DATA LOSS: the transactional id of a pre-committed transaction was initialized again before its commit",
		"uid", s.uid, "subtask", s.subtask, "transactional_id", txn.TransactionalID, "producer_id", txn.ProducerID, "epoch", txn.Epoch,
		"records", txn.Records, "bytes", txn.Bytes, "transaction_timeout", s.o.txnTimeout, "err", err)
	return weir.Unrecoverable(fmt.Errorf("kafka sink %q: POSSIBLE DATA LOSS: commit %v (%s): %w: the transactional id was initialized again before this commit, so the transaction was aborted (by the broker's transaction timeout, %v here, or by another producer with the same id: another job with the same prefix and uid?) unless an older checkpoint than the last one is being restored; if the broker was away longer than the timeout, raise kafka.WithTransactionTimeout and the broker's transaction.max.timeout.ms",
		s.uid, txn, txn.held(), err, s.o.txnTimeout))
}

// abortedAfter asks the coordinator whether txn's transactional id is in
// an abort right after txn's epoch: same producer id, epoch+1, state
// PrepareAbort or CompleteAbort, which is how Kafka leaves a transaction it
// aborted on its timeout. Errors answer false (the caller then reports a
// possible loss).
func abortedAfter(ctx context.Context, cl *kgo.Client, txn *Txn) bool {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{txn.TransactionalID}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false
	}
	for _, st := range resp.TransactionStates {
		if st.TransactionalID == txn.TransactionalID && st.ErrorCode == 0 {
			return st.ProducerID == txn.ProducerID && st.ProducerEpoch == txn.Epoch+1 &&
				(st.State == "PrepareAbort" || st.State == "CompleteAbort")
		}
	}
	return false
}
