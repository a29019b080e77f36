package twophase

import (
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Pending is a pre-committed transaction waiting for checkpoint ID to
// complete.
type Pending[TXN any] struct {
	ID  checkpoint.ID
	Txn TXN
}

// State is what a two-phase-commit sink puts into a checkpoint: the pending
// transactions, in increasing checkpoint id, and the open transaction that
// was begun after the barrier (HasCurrent reports whether there is one).
type State[TXN any] struct {
	Pending    []Pending[TXN]
	Current    TXN
	HasCurrent bool
}

// Tracker is the bookkeeping of one two-phase-commit sink subtask. It is not
// safe for concurrent use; the task's mailbox loop owns it.
type Tracker[TXN any] struct {
	pending    []Pending[TXN] // increasing ID
	current    TXN
	hasCurrent bool
	// lastID is the highest checkpoint id ever pre-committed or restored, so
	// that a reordered or repeated barrier is refused instead of breaking the
	// id order of pending.
	lastID checkpoint.ID
}

// NewTracker returns an empty tracker: no open and no pending transactions.
func NewTracker[TXN any]() *Tracker[TXN] {
	return &Tracker[TXN]{}
}

// Begin makes txn the open transaction that receives writes. It panics if a
// transaction is already open: silently replacing it would leak it, and that
// is a bug in the caller, who must PreCommit or Abort the open one first.
func (t *Tracker[TXN]) Begin(txn TXN) {
	if t.hasCurrent {
		panic("twophase: Begin while a transaction is open; PreCommit or Abort it first")
	}
	t.current, t.hasCurrent = txn, true
}

// Current returns the open transaction, if any.
func (t *Tracker[TXN]) Current() (TXN, bool) {
	return t.current, t.hasCurrent
}

// PreCommit is called at the barrier of checkpoint id: the open transaction
// becomes pending for id and is returned, and no transaction is open until
// the next Begin. The caller pre-commits the returned handle and begins the
// next transaction before taking State. It fails if no transaction is open
// or if id is not above every id seen before.
func (t *Tracker[TXN]) PreCommit(id checkpoint.ID) (TXN, error) {
	var zero TXN
	if !t.hasCurrent {
		return zero, fmt.Errorf("pre-commit for checkpoint %d: no open transaction; call Begin after each PreCommit and after Restore", id)
	}
	if id <= t.lastID {
		return zero, fmt.Errorf("pre-commit for checkpoint %d: checkpoint ids must increase, already saw %d", id, t.lastID)
	}
	txn := t.current
	t.pending = append(t.pending, Pending[TXN]{ID: id, Txn: txn})
	t.current, t.hasCurrent = zero, false
	t.lastID = id
	return txn, nil
}

// State returns what goes into the checkpoint. The returned slice is a copy;
// the tracker may change afterwards without affecting it (the handles
// themselves are copied by value).
func (t *Tracker[TXN]) State() State[TXN] {
	return State[TXN]{
		Pending:    append([]Pending[TXN](nil), t.pending...),
		Current:    t.current,
		HasCurrent: t.hasCurrent,
	}
}

// Complete handles notify-complete for checkpoint id. It removes and returns,
// in id order, every pending transaction with ID <= id, which the caller
// commits. Older ones are included because checkpoint id subsumes them: a
// transaction pre-committed for a checkpoint that was aborted, or whose own
// notification was lost, is still pending in the state of checkpoint id, so
// that checkpoint covers it. Unknown and repeated ids return nothing.
func (t *Tracker[TXN]) Complete(id checkpoint.ID) []Pending[TXN] {
	n := 0
	for n < len(t.pending) && t.pending[n].ID <= id {
		n++
	}
	if n == 0 {
		return nil
	}
	done := append([]Pending[TXN](nil), t.pending[:n]...)
	rest := copy(t.pending, t.pending[n:])
	clear(t.pending[rest:]) // drop references to committed handles
	t.pending = t.pending[:rest]
	return done
}

// Restore resets the tracker from the state of the checkpoint the job
// restores from. It returns the transactions to commit (every pending one in
// s: its checkpoint completed, only the notification may have been lost, and
// commit is idempotent) and those to abort (the open transaction in s, whose
// records came after the barrier and are replayed, plus the transaction this
// tracker had open, if any). Transactions this tracker held as pending are
// forgotten, not aborted: those a completed checkpoint covers are in s, the
// rest are leftovers the sink cleans when it opens. After Restore nothing is
// open; call Begin.
func (t *Tracker[TXN]) Restore(s State[TXN]) (commit []TXN, abort []TXN) {
	var zero TXN
	if t.hasCurrent {
		abort = append(abort, t.current)
	}
	if s.HasCurrent {
		abort = append(abort, s.Current)
	}
	for _, p := range s.Pending {
		commit = append(commit, p.Txn)
		t.lastID = max(t.lastID, p.ID)
	}
	clear(t.pending)
	t.pending = t.pending[:0]
	t.current, t.hasCurrent = zero, false
	return commit, abort
}

// Abort is called when the task fails or closes. It returns the open
// transaction, if any, for a best-effort abort, and forgets it; the
// transaction is covered by no checkpoint. Pending transactions are kept and
// not returned: a completed checkpoint whose notification has not arrived
// may cover them, and aborting them would lose committed data on restore.
func (t *Tracker[TXN]) Abort() []TXN {
	if !t.hasCurrent {
		return nil
	}
	var zero TXN
	txn := t.current
	t.current, t.hasCurrent = zero, false
	return []TXN{txn}
}
