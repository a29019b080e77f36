// Package twophase keeps the books of a two-phase-commit sink, the way
// Flink's TwoPhaseCommitSinkFunction does, without doing any IO itself.
//
// A transactional sink writes every record into an open transaction. At a
// checkpoint barrier the open transaction is pre-committed (flushed, made
// durable, but still invisible) and recorded as pending for that checkpoint;
// a fresh transaction is begun for the records after the barrier. Only when
// the JobManager notifies that the checkpoint completed is the pending
// transaction committed (made visible). Because notifications can be lost,
// the pending transactions travel inside the checkpoint itself, and a
// restore commits them again: commits must be idempotent.
//
// The Tracker is that bookkeeping, generic over the sink's transaction
// handle. It owns no files, goroutines or clocks; it tells the caller which
// handles to commit and which to abort:
//
//	t := twophase.NewTracker[file.Txn]()
//	t.Begin(sink.Begin())                 // records go into t.Current()
//	// barrier 7 arrives:
//	txn, _ := t.PreCommit(7)              // txn is now pending for 7
//	sink.PreCommit(txn)
//	t.Begin(sink.Begin())
//	state := t.State()                    // snapshot: pending + current
//	// notify-complete 7 (maybe 8 first, if 7's notification was lost):
//	for _, p := range t.Complete(7) { sink.Commit(p.Txn) }
//	// after a failure, in a new task:
//	commit, abort := t.Restore(state)     // commit the covered, abort the rest
//
// Pending transactions are never handed out for abort: a completed
// checkpoint may cover them even though this task never heard of its
// completion. A pending transaction whose checkpoint did not complete is not
// in the restored state; the sink removes such leftovers when it opens (see
// connectors/file Sink.Open).
//
// EncodeState and DecodeState turn a State into bytes for the checkpoint's
// operator state and back; decoding rejects corrupt input with ErrCorrupt
// and never panics.
package twophase
