package ordercheck

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/weirstream/weir"
)

// Txn is the sink's transaction handle, as it goes into checkpoints.
type Txn struct {
	// ID is unique in the Store, over all subtasks and attempts.
	ID int64
	// Subtask is the sink subtask that began it.
	Subtask int64
	// Attempt is the job attempt (restart count) that began it.
	Attempt int64
}

// Entry is one committed record.
type Entry struct {
	Src, Seq int64
	Flag     Flag
	// Attempt is the job attempt whose sink wrote the record.
	Attempt int64
}

// txnState is a transaction the Store holds and has not committed.
type txnState struct {
	txn          Txn
	precommitted bool
	entries      []Entry
}

// Store is an in-memory transactional store, shared by the sink subtasks of
// every attempt and read by the test: records become visible (Committed)
// only when their transaction commits. It outlives the job's attempts the
// way an external database would. It is safe for concurrent use.
type Store struct {
	// written counts records written into any transaction, aborted ones
	// included: the records that left the pipeline.
	written atomic.Int64
	// gaps and regressions count the check stage's flags over all attempts.
	gaps, regressions atomic.Int64
	// late, timerRegressions and timers count the event-time check's
	// findings and fired timers (Options.EventTime; eventtime.go).
	late, timerRegressions, timers atomic.Int64
	// corrupt counts records whose payload did not match their (src, seq).
	corrupt atomic.Int64

	mu        sync.Mutex
	nextID    int64
	open      map[int64]*txnState // begun or pre-committed, not yet committed or aborted
	committed map[int64]bool
	log       []Entry // committed records in commit order
	aborted   int
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{open: map[int64]*txnState{}, committed: map[int64]bool{}}
}

// Committed returns a copy of the committed records in commit order.
func (s *Store) Committed() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.log...)
}

// Uncommitted returns how many transactions are begun or pre-committed and
// neither committed nor aborted. After a job finished it should be 0: every
// pre-committed transaction a completed checkpoint covers was committed,
// every other was aborted or cleaned up.
func (s *Store) Uncommitted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// Aborted returns how many transactions were aborted or cleaned up.
func (s *Store) Aborted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

// Written returns how many records the sinks wrote into transactions, over
// all attempts, aborted transactions included.
func (s *Store) Written() int64 { return s.written.Load() }

// Flags returns how many gaps and regressions the check stage flagged over
// all attempts, including records whose transaction was aborted.
func (s *Store) Flags() (gaps, regressions int64) { return s.gaps.Load(), s.regressions.Load() }

// Corrupt returns how many records reached the sink with a payload that
// was not theirs.
func (s *Store) Corrupt() int64 { return s.corrupt.Load() }

func (s *Store) begin(subtask, attempt int64) Txn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	t := Txn{ID: s.nextID, Subtask: subtask, Attempt: attempt}
	s.open[t.ID] = &txnState{txn: t}
	return t
}

func (s *Store) write(t Txn, batch []Record, payload int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.open[t.ID]
	if !ok {
		return fmt.Errorf("write into transaction %+v: it is not open (committed, aborted or cleaned up): the sink must write into its current transaction only", t)
	}
	if st.precommitted {
		return fmt.Errorf("write into transaction %+v: it is pre-committed already: the sink must begin a new transaction after a pre-commit", t)
	}
	for _, r := range batch {
		if !payloadOK(r.Payload, payload, r.Src, r.Seq) {
			s.corrupt.Add(1)
		}
		st.entries = append(st.entries, Entry{Src: r.Src, Seq: r.Seq, Flag: r.Flag, Attempt: t.Attempt})
	}
	s.written.Add(int64(len(batch)))
	return nil
}

func (s *Store) preCommit(t Txn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.open[t.ID]
	if !ok {
		return fmt.Errorf("pre-commit transaction %+v: it is not open: %w", t, weir.ErrTransactionLost)
	}
	st.precommitted = true
	return nil
}

func (s *Store) commit(t Txn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.committed[t.ID] {
		return nil // idempotent: a restore may commit what a notification committed
	}
	st, ok := s.open[t.ID]
	if !ok {
		return fmt.Errorf("commit transaction %+v: neither open nor committed: %w", t, weir.ErrTransactionLost)
	}
	if !st.precommitted {
		return fmt.Errorf("commit transaction %+v: it was never pre-committed: only transactions a checkpoint holds may commit", t)
	}
	s.log = append(s.log, st.entries...)
	s.committed[t.ID] = true
	delete(s.open, t.ID)
	return nil
}

func (s *Store) abort(t Txn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.committed[t.ID] {
		return fmt.Errorf("abort transaction %+v: %w", t, weir.ErrAlreadyCommitted)
	}
	if _, ok := s.open[t.ID]; ok {
		delete(s.open, t.ID)
		s.aborted++
	}
	return nil
}

// cleanUp aborts every transaction of subtask that keep does not name: what
// an earlier attempt left behind (pre-committed for checkpoints that never
// completed, or open when it crashed).
func (s *Store) cleanUp(subtask int64, keep []Txn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := make(map[int64]bool, len(keep))
	for _, t := range keep {
		kept[t.ID] = true
	}
	for id, st := range s.open {
		if st.txn.Subtask == subtask && !kept[id] {
			delete(s.open, id)
			s.aborted++
		}
	}
}
