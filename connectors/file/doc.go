// Package file is weir's file connector: an exactly-once sink that writes
// lines into part files through two-phase commit, and a line reader over a
// glob of input files that resumes from a byte offset.
//
// # Sink
//
// Each sink subtask writes its transactions into hidden in-progress files
// and makes them visible with an atomic rename:
//
//	.part-<uid>-<subtask>-<seq>.inprogress   written, invisible
//	part-<uid>-<subtask>-<seq>               committed, visible
//
// A reader that lists the directory and skips dot-files sees exactly the
// committed data (ReadCommitted does that). ExactlyOnce's two-phase-commit
// sink drives a Sink as follows; a program may drive one itself the same
// way:
//
//	s, _ := file.NewSink(dir, "sink-1", subtask)
//	s.Open(restoredTxns)        // clean this subtask's leftovers
//	txn, _ := s.Begin()         // .part-sink-1-0-<seq>.inprogress
//	s.Write(txn, lines)         // per batch, buffered
//	s.PreCommit(txn)            // at the barrier: flush, fsync, close
//	s.Commit(txn)               // on notify-complete or restore: rename
//	s.Abort(txn)                // uncovered data: remove
//
// Commit and Abort are idempotent, because notifications get lost and a
// restore commits the checkpoint's pending transactions again. A commit whose
// in-progress and final files are both missing fails with weir.ErrTransactionLost: that
// data is gone and nothing may hide it. An empty transaction commits to an
// empty part file; committing to no file would make it indistinguishable,
// after a crash, from a lost one.
//
// Sequence numbers continue after the highest one seen on disk or among the
// restored handles, so a new attempt never reuses the name of a file that
// exists or of a transaction a restored checkpoint holds.
//
// # Source
//
// ExpandGlob lists the input files in a stable order; a LineReader returns
// their lines in batches and the Position after each batch, which is what a
// source puts into its checkpoint:
//
//	files, _ := file.ExpandGlob("/data/in/*.log")
//	r, _ := file.NewLineReader(files, restoredPos)
//	for {
//		lines, pos, err := r.Next(1024, lines)
//		if err == io.EOF { break }
//		// emit lines; pos is the offset to resume from after them
//	}
//
// Position names a file by its index in the list, so a source must restore
// with the same list it checkpointed (keep the list in the source's state,
// or use a glob whose matches do not change).
//
// Owns: the part-file layout, its transactions and the line source. Must
// not touch: the runtime; it is written against the public API like any
// user's connector.
package file
