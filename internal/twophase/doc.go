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
//	commit, abort := t.Restore(restored)  // restored: the decoded State, or the zero State
//	// sink.Open(commit+abort), then sink.Commit each of commit, sink.Abort each of abort
//	txn, _ := sink.Begin()
//	t.Begin(txn)                          // records go into t.Current()
//	// barrier 7 arrives:
//	txn, _ = t.PreCommit(7)               // txn is now pending for 7
//	sink.PreCommit(txn)
//	next, _ := sink.Begin()
//	t.Begin(next)
//	b, _ := twophase.EncodeState(t.State(), codec) // into checkpoint 7
//	// notify-complete 8 (7's notification may be lost; 8 covers it):
//	for _, p := range t.Complete(8) { sink.Commit(p.Txn) }
//	// task failure or close:
//	for _, txn := range t.Abort() { sink.Abort(txn) }
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
//
// Owns: which transaction is open, pending or to be committed or aborted,
// and its encoding in the checkpoint. Must not touch: the sink's external
// system (the operator in package weir calls the sink) or the clock
// (checked by internal/archtest).
package twophase
