// Package postgrescdc captures changes of PostgreSQL tables (change data
// capture) into a weir job, exactly once: an initial snapshot of the
// tables, then every insert, update and delete from the write-ahead log,
// read through a logical replication slot with the pgoutput plugin
// (github.com/jackc/pglogrepl over pgx). It also has Replica, an
// exactly-once sink that applies such a changelog to replica tables, and
// MarshalDebezium, which writes a change as a Debezium change event;
// Decode copies a change's row into a struct.
//
//	src := weir.FromSourceWithWatermarks(env,
//		postgrescdc.Source(dsn, []string{"orders", "customers"},
//			postgrescdc.WithSlot("orders_cdc"), postgrescdc.WithCreateSlot(), postgrescdc.WithCreatePublication()),
//		weir.ForBoundedOutOfOrderness[postgrescdc.Change](time.Second).
//			WithTimestampAssigner(func(c postgrescdc.Change, _ int64) int64 { return c.Timestamp() }))
//	weir.SinkToTransactional(src, postgrescdc.Replica(replicaDSN))
//
// # Setup
//
// Open checks, and names the fix of, each of: wal_level not logical, a
// role without the REPLICATION privilege, a captured table that is
// missing, has no primary key, has REPLICA IDENTITY NOTHING or a primary
// key column of a type the chunks cannot order by (see Limits), a missing publication or one that
// does not publish a table, and a slot in use by another reader or that
// exists on a fresh start. The slot and the publication are created when
// asked to (WithCreateSlot, WithCreatePublication) and never dropped:
// only a slot this job created before any checkpoint completed, in an
// earlier attempt of the same process or in an earlier run that left a
// record of it (WithSlotRecord), is dropped and created anew.
//
// # Snapshot and log, exactly once
//
// A fresh start creates the slot with EXPORT_SNAPSHOT. Its consistent
// point S is where the log replay begins; PostgreSQL guarantees that the
// exported snapshot E sees exactly the transactions that committed before
// S. The source records S and E's xmin, xmax and in-progress list (not E
// itself: it dies with the replication connection, and a restore could
// not use it). The slot confirms nothing while the snapshot runs, so the
// server keeps all WAL from S.
//
// The snapshot reads each table in primary key order in chunks of at
// most WithChunkRows rows (and the task's batch size), each chunk in a
// REPEATABLE READ transaction of its own: "the next n rows above the
// previous chunk's last key". Its first statement fixes the chunk's MVCC
// snapshot X and records X (pg_current_snapshot) and the WAL insert
// position after it. The rows are emitted in pieces of at most the
// task's batch size; each piece, once emitted, is recorded with its key
// range (above the previous piece, up to its last key) and X in the
// source's checkpoint state, as a chunk of its own. So a checkpoint may
// fall between two pieces, and after a failure the snapshot resumes
// above the last recorded piece, in a new snapshot. The key ranges of
// the recorded chunks partition the key space of a table (the last
// reaches +∞).
//
// After the last chunk the source replays the log from S and, for each
// change of a transaction T to a key k, looks up the chunk C whose range
// holds k: if X(C) sees T, the row C emitted already contains T's change
// and the change is skipped, else it is emitted. Why that is exact, for
// one key k in chunk C:
//
//  1. Every transaction that wrote k either committed before S (it is
//     not in the log, and E sees it) or after (it is in the log, and E
//     does not see it). X(C) was taken after the slot existed, and sees
//     every transaction E sees: a transaction whose commit record the
//     slot counted but that PostgreSQL has not yet removed from its proc
//     array can, for a moment, look in progress to a new snapshot; the
//     chunk retakes X until no transaction E sees is in progress in X.
//  2. Transactions that write the same row are serialised by its row
//     lock (or by the unique index, for inserts of the same key), so the
//     set of them X(C) sees is a prefix of their commit order, and the
//     log holds them in commit order.
//  3. Hence C's row for k is the state after that prefix, and the
//     emitted log changes of k are exactly the rest, in order: every
//     change of k appears once, after the snapshot row or instead of it.
//
// An update that changes the primary key moves a row between chunks; it
// is emitted as a delete of the old key and an insert of the new one,
// each judged by its own chunk. A transaction that committed after every
// chunk's insert position is seen by no chunk; once the log passes that
// position the chunk list is dropped from the state.
//
// # Checkpoints
//
// While streaming, the state holds Done, an LSN before which every
// transaction was emitted (a Commit's end LSN, or a keepalive's WAL end
// received between transactions: the walsender sends a transaction when
// it decodes its commit record, in WAL order), and how many changes of a
// transaction in progress were emitted. A restore starts replication at
// Done and skips that many changes of that transaction, so nothing is
// emitted twice. The last change of a transaction is held until the next
// message says whether the transaction ends there (Change.TxLast).
//
// The slot's confirmed flush LSN is only ever set to the Done of a
// completed checkpoint, on NotifyCheckpointComplete; standby status
// updates, sent every WithStatusInterval and on each confirmation, keep
// the connection alive and, since keepalives move Done while the
// captured tables are idle, let the server recycle WAL meanwhile. A
// restore that finds the slot confirmed past its checkpoint (restored
// from an older checkpoint, or the slot read by someone else) fails
// rather than skip changes.
//
// # Schema changes
//
// A column added to or dropped from a captured table reaches the source
// as a new Relation message before the first change that has it: the
// changes from there on carry the new set of columns (Change.Columns).
// Replica adds a new column to the replica table and keeps a dropped
// one. TRUNCATE fails the job with an error saying how to exclude it.
//
// # Limits
//
// Source runs with parallelism 1: chunks are read one after the other
// by one subtask. Capture with WithSnapshotParallelism(n) reads the
// snapshot with n readers: a planner source (the slot, a plan of key
// ranges, the log) sends range assignments and log changes over an edge
// keyed by range to a keyed reader function, which reads each range in
// a snapshot of its own and judges the range's log changes by it, so a
// key's row and its changes leave one reader on one channel
// (parallel.go; docs/connectors/postgres-cdc.md, "Parallel initial
// snapshot"). Primary key columns must be of integer (smallint,
// integer, bigint), text (text, varchar), uuid or time (timestamp,
// timestamptz, date) types; infinite times are refused when read. Text
// keys are chunked in byte order: a key of collation C or POSIX uses its
// index, others sort (COLLATE "C"). PostgreSQL 13 or later. Large transactions are not streamed
// (pgoutput proto_version 1): the server decodes them whole before
// sending.
package postgrescdc
