package kafka

import "fmt"

// Txn is the handle of one exactly-once sink transaction, what the
// two-phase-commit operator keeps in checkpoints. It is a pointer because
// part of it (Empty) is only known when the transaction is pre-committed,
// and the operator encodes the handle after PreCommit.
type Txn struct {
	// TransactionalID is the id from the subtask's pool,
	// "<prefix>-<uid>-<subtask>-<k>".
	TransactionalID string
	// Subtask and Parallelism are where the transaction was begun; a
	// restore at a lower parallelism learns from them which ids of the
	// vanished subtasks to clean.
	Subtask, Parallelism int
	// Slot is k, the index in the pool.
	Slot int
	// ProducerID and Epoch are the producer the transaction was begun
	// with; Commit and Abort send EndTxn with them, from any process.
	ProducerID int64
	Epoch      int16
	// Empty is set at pre-commit when nothing was produced: no transaction
	// exists on the broker and Commit and Abort do nothing.
	Empty bool
	// Records and Bytes count what was written into the transaction (key,
	// value and header bytes), set at pre-commit. A commit that finds the
	// transaction aborted reports them as the data lost.
	Records, Bytes int64
}

// String names the transaction in messages.
func (t *Txn) String() string {
	if t == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s(producer %d epoch %d)", t.TransactionalID, t.ProducerID, t.Epoch)
}

// held describes what the transaction holds, for messages.
func (t *Txn) held() string {
	return fmt.Sprintf("%d records, %d bytes", t.Records, t.Bytes)
}

// transactionalID is the id of slot k of subtask s.
func transactionalID(prefix, uid string, subtask, k int) string {
	return fmt.Sprintf("%s-%s-%d-%d", prefix, uid, subtask, k)
}
