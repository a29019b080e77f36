package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrOutcomeUnknown is wrapped by Commit and Abort when COMMIT PREPARED or
// ROLLBACK PREPARED was sent, the connection broke before the answer came,
// and the database stayed out of reach for the whole WithResolveTimeout:
// the transaction is either finished or still prepared. The error is not
// permanent; the restore that follows the task's failure finishes it.
var ErrOutcomeUnknown = errors.New("outcome unknown")

// Backoff between attempts to reach the database while resolving an
// unknown outcome: from resolveBackoffMin, doubling, to resolveBackoffMax.
const (
	resolveBackoffMin = 50 * time.Millisecond
	resolveBackoffMax = time.Second
	// resolveLogEvery bounds the warnings of one resolution that keeps
	// failing: the first, then one per period with the attempts so far.
	resolveLogEvery = 10 * time.Second
)

// finishPrepared runs COMMIT PREPARED (commit) or ROLLBACK PREPARED for
// txn on the control connection and reports whether txn committed, that
// is whether its marker row is visible once the statement is done.
//
// A server error that answers the statement (permission denied, wrong
// database) is returned as it is. The outcome is unknown when the
// connection breaks, or the statement times out, after the statement may
// have been sent: the server may have finished the transaction and only
// the answer was lost. Then finishPrepared closes the connection and
// resolves the outcome on a new one, retrying with backoff while the
// server is unreachable, for at most the resolve timeout:
//
//  1. Is the gid still in pg_prepared_xacts? Then the statement did not
//     run (or ran and failed): it is sent again. COMMIT PREPARED of a
//     prepared transaction is safe to repeat until it succeeds once; the
//     second can only run if the first did not.
//  2. Gone: the transaction committed or rolled back, and the marker row,
//     which the transaction itself inserted, says which. Only the sink's
//     COMMIT/ROLLBACK PREPARED touches its gids (Open's clean-up rolls back
//     only leftovers no checkpoint lists), so "gone without marker" after
//     a COMMIT means someone rolled it back by hand: Commit reports
//     weir.ErrTransactionLost, as it does when the first answer says so.
//
// The two questions are two statements, in that order, each with its own
// snapshot. One statement asking both would be wrong: its snapshot could
// be taken while the old session's COMMIT PREPARED is still running (the
// marker is invisible), and the gid could leave pg_prepared_xacts before
// the statement reads that view (the gid is gone): "gone, no marker",
// lost, for a transaction that committed. Asked second, the marker query's
// snapshot is taken after the gid left, and PostgreSQL removes a gid
// only after the commit is visible to new snapshots.
//
// While the old session's statement still runs, the gid is still listed
// and a new COMMIT PREPARED fails with "prepared transaction with
// identifier … is busy" (55000); that is retried like a broken connection.
func (s *exactlyOnce[T]) finishPrepared(ctx context.Context, txn Txn, commit bool) (committed bool, err error) {
	verb := "ROLLBACK PREPARED"
	if commit {
		verb = "COMMIT PREPARED"
	}
	r := resolver{start: time.Now(), timeout: s.cfg.resolveTimeout, backoff: resolveBackoffMin}
	rctx, cancel := r.context(ctx)
	defer cancel()
	// lookup: the last statement's outcome is unknown; ask before
	// sending it again.
	lookup := false
	for {
		if s.control == nil || s.control.IsClosed() {
			if err := s.reconnectControl(rctx); err != nil {
				if err := s.retry(ctx, rctx, &r, txn, verb, err); err != nil {
					return false, s.unresolved(txn, verb, lookup, &r, err)
				}
				continue
			}
		}
		if lookup {
			prepared, err := s.isPrepared(rctx, txn)
			if err == nil && !prepared {
				committed, err = s.markerVisible(rctx, txn)
				if err == nil {
					s.resolved(txn, verb, &r, "the transaction was no longer prepared; its marker row decided", committed)
					return committed, nil
				}
			}
			if err != nil {
				s.dropControl()
				if err := s.retry(ctx, rctx, &r, txn, verb, err); err != nil {
					return false, s.unresolved(txn, verb, lookup, &r, err)
				}
				continue
			}
			// Still prepared: the statement did not run. Send it again.
		}
		opCtx, opCancel := s.cfg.op(rctx)
		_, err := s.control.Exec(opCtx, verb+" "+quoteLiteral(txn.GID))
		opCancel()
		if err == nil {
			if r.attempts > 0 {
				s.resolved(txn, verb, &r, "the transaction was still prepared and is now finished", commit)
			}
			return commit, nil
		}
		switch state := sqlState(err); {
		case state == undefinedObject:
			// Not prepared (any more): the marker decides. A lookup
			// that fails is retried like any other.
			lookup = true
			continue
		case state != "" && !retryableState(state):
			return false, fmt.Errorf("postgres sink %s/%d: %s %s on %s: %w", s.sink, s.subtask, strings.ToLower(verb), txn.GID, s.server, err)
		}
		// The statement may have reached the server. pgconn.SafeToRetry
		// cannot tell: when the socket breaks while pgx waits for the
		// answer, pgx v5 closes the connection and reports "conn closed",
		// marked safe to retry, for a statement it did send. The
		// connection was open when Exec started (checked above), so any
		// such failure counts as sent.
		lookup = true
		s.dropControl()
		if err := s.retry(ctx, rctx, &r, txn, verb, err); err != nil {
			return false, s.unresolved(txn, verb, lookup, &r, err)
		}
	}
}

// retryableState reports whether a server error leaves the statement's
// outcome open to a retry: connection exceptions (08), the server
// shutting down or restarting (57: admin_shutdown, crash_shutdown,
// cannot_connect_now), insufficient resources (53) and system errors
// (58), and 55000, "prepared transaction … is busy": another session,
// the one whose connection broke, is still finishing it.
func retryableState(state string) bool {
	switch state[:2] {
	case "08", "53", "57", "58":
		return true
	}
	return state == "55000"
}

// isPrepared reports whether txn is listed in pg_prepared_xacts.
func (s *exactlyOnce[T]) isPrepared(ctx context.Context, txn Txn) (bool, error) {
	ctx, cancel := s.cfg.op(ctx)
	defer cancel()
	var ok bool
	if err := s.control.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_prepared_xacts WHERE gid = $1)", txn.GID).Scan(&ok); err != nil {
		return false, fmt.Errorf("look up %s in pg_prepared_xacts: %w", txn.GID, err)
	}
	return ok, nil
}

// reconnectControl replaces the control connection.
func (s *exactlyOnce[T]) reconnectControl(ctx context.Context) error {
	s.dropControl()
	ctx, cancel := s.cfg.op(ctx)
	defer cancel()
	c, err := connect(ctx, s.cfg, s.connString)
	if err != nil {
		return err
	}
	s.control = c
	return nil
}

// dropControl closes the control connection, if any, without waiting for
// the server: it is broken, or in an unknown state.
func (s *exactlyOnce[T]) dropControl() {
	if s.control == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	s.control.Close(ctx)
	s.control = nil
}

// retry logs a failed attempt, at most once per resolveLogEvery, and
// waits for the next (resolver.fail).
func (s *exactlyOnce[T]) retry(ctx, rctx context.Context, r *resolver, txn Txn, verb string, err error) error {
	if r.attempts == 0 || time.Since(r.logged) >= resolveLogEvery {
		r.logged = time.Now()
		s.log.Warn("postgres sink: "+verb+" did not get through; retrying on a new connection until its outcome is known",
			"sink", s.sink, "subtask", s.subtask, "gid", txn.GID, "server", s.server, "attempts", r.attempts+1,
			"for", time.Since(r.start).Round(time.Millisecond), "bound", s.cfg.resolveTimeout, "error", err)
	}
	return r.fail(ctx, rctx, err)
}

// resolved logs how an unknown outcome was settled.
func (s *exactlyOnce[T]) resolved(txn Txn, verb string, r *resolver, how string, committed bool) {
	s.log.Info("postgres sink: resolved the outcome of "+verb,
		"sink", s.sink, "subtask", s.subtask, "gid", txn.GID, "server", s.server, "how", how, "committed", committed,
		"attempts", r.attempts, "after", time.Since(r.start).Round(time.Millisecond))
}

// unresolved is the error of a resolution that gave up: the task's
// context ended, or the resolve timeout passed.
func (s *exactlyOnce[T]) unresolved(txn Txn, verb string, sent bool, r *resolver, err error) error {
	what := fmt.Sprintf("postgres sink %s/%d: %s %s on %s", s.sink, s.subtask, strings.ToLower(verb), txn.GID, s.server)
	if !errors.Is(err, errResolveTimeout) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !sent {
		return fmt.Errorf("%s: database unreachable, %d attempts in %s (WithResolveTimeout %s); the statement never reached the server, so the transaction is still prepared, and the restore of its checkpoint finishes it: %w",
			what, r.attempts, time.Since(r.start).Round(time.Millisecond), s.cfg.resolveTimeout, r.last)
	}
	return fmt.Errorf("%s: %w after %d attempts in %s (WithResolveTimeout %s): the connection broke after the statement was sent and the database stayed unreachable; the transaction is either finished or still prepared, and the restore of its checkpoint finishes it: %w",
		what, ErrOutcomeUnknown, r.attempts, time.Since(r.start).Round(time.Millisecond), s.cfg.resolveTimeout, r.last)
}

// errResolveTimeout is resolver.fail's error when the resolve timeout
// passed.
var errResolveTimeout = errors.New("resolve timeout passed")

// resolver paces the attempts of one resolution. Time is measured with
// the monotonic clock (time.Since), so wall-clock jumps do not shorten or
// stretch the bound.
type resolver struct {
	start    time.Time
	timeout  time.Duration // 0 or below: no bound but the task's context
	backoff  time.Duration
	attempts int
	last     error // the latest failure
	logged   time.Time
}

// context bounds ctx by the resolve timeout.
func (r *resolver) context(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, r.timeout)
}

// fail records a failed attempt and waits before the next one. It
// returns an error when there is no next one: ctx (the task's) ended, or
// rctx (bounded by the resolve timeout) did: errResolveTimeout.
func (r *resolver) fail(ctx, rctx context.Context, err error) error {
	r.attempts++
	r.last = err
	t := time.NewTimer(r.backoff)
	defer t.Stop()
	r.backoff = min(2*r.backoff, resolveBackoffMax)
	select {
	case <-t.C:
	case <-rctx.Done():
	}
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("gave up resolving after %d attempts: %w (last error: %w)", r.attempts, ctx.Err(), err)
	case rctx.Err() != nil:
		return errResolveTimeout
	}
	return nil
}
