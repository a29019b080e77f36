package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestTimeout bounds one transaction-coordinator exchange, retries of
// transient errors (CONCURRENT_TRANSACTIONS while a previous end is being
// written, coordinator moves) included.
const requestTimeout = 60 * time.Second

// errTxnStale reports that the producer epoch moved on since the
// transaction began: the transactional id was initialized again, which
// ended the transaction one way or the other.
var errTxnStale = errors.New("producer epoch moved on")

// coordinatorRetriable lists errors after which the same request succeeds
// once the coordinator has caught up.
func coordinatorRetriable(err error) bool {
	return errors.Is(err, kerr.ConcurrentTransactions) || errors.Is(err, kerr.CoordinatorLoadInProgress) ||
		errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable)
}

// retry runs do until it returns an error that is not coordinator-retriable,
// backing off from 5 ms up to 500 ms, within requestTimeout.
func retry(ctx context.Context, do func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	backoff := 5 * time.Millisecond
	for {
		err := do(ctx)
		if err == nil || !coordinatorRetriable(err) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// endTxn sends EndTxn for the transaction (pid, epoch) of id and returns
// the broker's error, and the request version used (the version decides how
// a repeated end is answered, see resolveEnd).
func endTxn(ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) (int16, error) {
	var version int16
	err := retry(ctx, func(ctx context.Context) error {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID = id
		req.ProducerID = pid
		req.ProducerEpoch = epoch
		req.Commit = commit
		resp, err := req.RequestWith(ctx, cl)
		version = req.GetVersion()
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	return version, err
}

// fence initializes id as a new producer: the broker aborts any transaction
// still open on it and bumps the epoch, so that an earlier producer with
// this id (a zombie of a previous attempt) can no longer write or commit.
func fence(ctx context.Context, cl *kgo.Client, id string, timeout time.Duration) error {
	return retry(ctx, func(ctx context.Context) error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(id)
		req.TransactionTimeoutMillis = int32(timeout.Milliseconds())
		req.ProducerID = -1
		req.ProducerEpoch = -1
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
}

// committedState asks the coordinator whether id's last transaction was a
// commit by producer (pid, epoch). It is how an abort answered with
// INVALID_TXN_STATE is told apart: by a broker without transaction
// version 2 the same answer means "committed" or "never began".
func committedState(ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16) (bool, error) {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false, err
	}
	for _, st := range resp.TransactionStates {
		if st.TransactionalID != id {
			continue
		}
		if err := kerr.ErrorForCode(st.ErrorCode); err != nil {
			return false, err
		}
		return st.State == "CompleteCommit" && st.ProducerID == pid && st.ProducerEpoch == epoch, nil
	}
	return false, fmt.Errorf("describe transaction %s: no state in the response", id)
}

// isStale reports the errors a broker gives for a producer epoch or id it
// no longer knows.
func isStale(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidProducerIDMapping)
}

// knownIDs returns those of ids a transaction coordinator knows: a
// producer initialised them once.
func knownIDs(ctx context.Context, cl *kgo.Client, ids []string) ([]string, error) {
	var known []string
	err := retry(ctx, func(ctx context.Context) error {
		known = known[:0]
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = ids
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, st := range resp.TransactionStates {
			switch err := kerr.ErrorForCode(st.ErrorCode); {
			case err == nil:
				known = append(known, st.TransactionalID)
			case !errors.Is(err, kerr.TransactionalIDNotFound):
				return fmt.Errorf("describe transaction %s: %w", st.TransactionalID, err)
			}
		}
		return nil
	})
	return known, err
}
