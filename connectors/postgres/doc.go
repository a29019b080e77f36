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
//     (ErrTxnLost).
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
