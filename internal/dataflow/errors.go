package dataflow

import "errors"

// ErrTransactionLost is what a transactional sink's commit wraps when a
// transaction a completed checkpoint holds is gone, neither pending nor
// committed: its records are lost, and no restart can bring them back.
// The public API exports it (weir.ErrTransactionLost) for sinks to wrap;
// it lives here because the engine reacts to it too: the task fails the
// job at once, and the JobMaster counts the loss (the job's
// numberOfLostTransactions metric, which alerts).
var ErrTransactionLost = errors.New("pre-committed transaction lost")
