// Package postgres writes streams into PostgreSQL tables, in three modes:
//
//   - ExactlyOnce, a two-phase-commit sink for weir.SinkToTransactional:
//     the table holds exactly the rows of a run without failures;
//   - Upsert, for weir.SinkTo: INSERT … ON CONFLICT DO UPDATE, one row per
//     key, correct after replays because a replay rewrites the same keys;
//   - AtLeastOnce, for weir.SinkTo: batched COPY, duplicates after a
//     restore.
//
// Walkthrough of the exactly-once protocol for one sink subtask:
//
//	weir.SinkToTransactional(results, postgres.ExactlyOnce(
//		"postgres://postgres@127.0.0.1:5432/test", "results",
//		[]string{"i", "account", "count", "total"},
//		func(r Result, dst []any) []any { return append(dst, r.I, r.Account, r.Count, r.Total) },
//		postgres.WithCreateTable("i bigint, account bigint, count bigint, total bigint"),
//	)).UID("pg")
//
// The steps:
//
//  1. Open connects twice (one connection carries the open transaction,
//     the other commits, rolls back and looks up), checks that the server
//     allows prepared transactions, creates the marker table
//     weir_sink_commits (and the target table, if asked), and rolls back
//     its own leftover prepared transactions that the restored checkpoint
//     does not list. "Its own" means their gid starts with the job name
//     and the sink's uid, whatever table they write: two jobs of the same
//     name with a sink of the same uid must not share a database, or each
//     rolls back the other's pre-committed transactions at its start.
//  2. Begin names the transaction "weir:pg:<subtask>:<seq>"; the first
//     rows open it on the server (BEGIN) and go in with COPY, in batches.
//  3. At the checkpoint barrier PreCommit copies the rest, inserts the
//     marker row (gid, sink, subtask, seq, target, rows) and runs PREPARE
//     TRANSACTION 'weir:pg:0:7'. The transaction now survives any crash;
//     its handle goes into the checkpoint.
//  4. When the checkpoint completes, Commit runs COMMIT PREPARED. If the
//     id is no longer prepared, the marker row decides: visible means a
//     previous Commit got there (success), absent means the data is lost
//     (weir.ErrTransactionLost). If the answer never comes, see "Commits with an
//     unknown outcome" below.
//  5. A restore commits the transactions its checkpoint pre-committed and
//     aborts the one it recorded as open (ROLLBACK PREPARED if it got
//     prepared later). Aborting a transaction whose marker is visible
//     fails with weir.ErrAlreadyCommitted: the checkpoint is older than
//     output already visible.
//
// Two crash windows show why both halves are needed. Case A: the task
// dies after PREPARE but before the checkpoint completes; the restore
// comes from the previous checkpoint, which recorded this transaction as
// open, so it is rolled back and its records replayed. Case B: the
// checkpoint completed but the task died before COMMIT PREPARED (or after
// it, before noting it); the restore commits it, or finds its marker and
// treats it as done.
//
// # Commits with an unknown outcome
//
// A COMMIT PREPARED can be sent and its answer lost: the connection drops,
// the server restarts, the network breaks. The server may have committed
// or not. The sink does not guess and does not fail the task for it; it
// asks, on a new connection:
//
//   - still listed in pg_prepared_xacts: the commit did not happen; it
//     sends COMMIT PREPARED again;
//   - no longer listed: it happened, or someone rolled the transaction
//     back by hand. The marker row tells which: it is visible exactly when
//     the transaction committed. Committed means done (nothing is sent
//     twice); rolled back means the rows are lost, and Commit fails with
//     weir.ErrTransactionLost, which fails the job rather than hide the loss.
//
// The list is read first and the marker second, in separate statements,
// so that a commit still finishing in the old session cannot look like a
// loss. While the server cannot be reached, the sink reconnects with
// backoff (50 ms, doubling to 1 s), for at most WithResolveTimeout
// (default 1 minute). Until then the task waits, and its input backs up.
// Past the bound the task fails with an error that names the checkpoint,
// the transaction id and the server and wraps ErrOutcomeUnknown, for
// example:
//
//	commit transaction of checkpoint 12: postgres sink demo:pg/0: commit prepared demo:pg:0:11
//	on db:5432/app: outcome unknown after 23 attempts in 1m0s (WithResolveTimeout 1m0s): the
//	connection broke after the statement was sent and the database stayed unreachable; the
//	transaction is either finished or still prepared, and the restore of its checkpoint finishes it: …
//
// (or, if the statement never got out, "database unreachable … the
// transaction is still prepared"). The job's restart strategy then
// restarts it, and the restore commits the transaction, or finds it
// committed, once the database is back: a transaction is never committed
// twice and never left prepared. ROLLBACK PREPARED, which a restore sends
// for the transaction its checkpoint had open, is resolved the same way;
// there a visible marker means the transaction committed, and Abort says
// so with weir.ErrAlreadyCommitted.
//
// # Database restarts
//
// A restart or crash of the server (pg_ctlcluster restart, or stop -m
// immediate and start) ends the sink's sessions. The open transaction, not yet
// prepared, is rolled back by the server; its records are not lost, the
// task fails and the job restores its newest completed checkpoint, which
// replays them. Prepared transactions survive the restart on disk: the
// restore commits those its checkpoint completed and rolls back the rest.
// A commit under way when the server went down is resolved as above. The
// result is exactly one row per record and no prepared transaction left,
// with one restart per outage (more, with the restart strategy's backoff,
// while the server is still down: Open fails to connect until it is
// back). cmd/weir's TestPostgresRestart and TestPostgresCrashStop check
// this with the demo.
//
// # Zombie attempts
//
// PostgreSQL has no producer epoch, so an earlier attempt of a subtask
// that was declared dead but runs on (paused past the heartbeat timeout,
// partitioned) is not fenced: it can prepare its open transaction after
// the next attempt opened. Nothing is lost or duplicated: no checkpoint
// holds that transaction, so it is never committed, and the next attempt
// that opens rolls it back with the other leftovers. The next attempt
// picks the same transaction id (the zombie's was not visible when it
// opened), and its PreCommit waits on the zombie's marker row for at most
// the sink's timeout (WithTimeout), then fails with an error saying so;
// the failover it causes clears the zombie's transaction
// (TestZombiePrepareAfterTheNextAttemptOpened).
//
// After a restore at a lower parallelism, leftover prepared transactions of
// old subtask j are rolled back by new subtask j mod parallelism, the one
// the checkpoint's handles of j are given to.
//
// The server must have max_prepared_transactions > 0 (at least twice the
// sink's parallelism). It is 0 by default; Open fails at once with the
// commands to change it. A prepared transaction holds its locks and a slot
// until committed or rolled back, so do not reuse a transaction prefix and
// uid of a running job elsewhere (WithTransactionPrefix).
//
// Owns: PostgreSQL sinks on pgx and their prepared transactions. Must not
// touch: the runtime; it is written against the public API like any user's
// connector.
package postgres
