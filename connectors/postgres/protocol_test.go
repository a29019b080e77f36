package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
)

// idSink is a sink subtask of ints into a one-column table, driven
// directly (as the two-phase-commit operator would) rather than by a job.
type idSink struct {
	*exactlyOnce[int64]
	t *testing.T
}

// newIDSink opens subtask of parallelism under the transaction prefix, as
// the operator would after restoring restored.
func newIDSink(t *testing.T, prefix, table string, subtask, parallelism int, restored ...Txn) idSink {
	t.Helper()
	f := ExactlyOnce(testConnString(), table, []string{"id"},
		func(v int64, dst []any) []any { return append(dst, v) },
		WithTransactionPrefix(prefix), WithCreateTable("id bigint"))
	s := f().(*exactlyOnce[int64])
	if err := s.open(context.Background(), "pg", subtask, parallelism, nil, restored); err != nil {
		t.Fatalf("open subtask %d/%d restoring %v: %v", subtask, parallelism, restored, err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return idSink{s, t}
}

// prepare begins a transaction, writes ids into it and pre-commits it.
func (s idSink) prepare(ids ...int64) Txn {
	s.t.Helper()
	txn, err := s.Begin(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.Write(context.Background(), txn, ids); err != nil {
		s.t.Fatal(err)
	}
	if err := s.PreCommit(context.Background(), txn); err != nil {
		s.t.Fatal(err)
	}
	return txn
}

func (s idSink) must(what string, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

// protocolTable resets prefix and table for a protocol test; both are
// named after the test.
func protocolTable(t *testing.T) (db *pgx.Conn, prefix, table string) {
	t.Helper()
	needServer(t, true)
	db = testDB(t)
	table = "weir_t_" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	resetSink(t, db, table, table)
	return db, table, table
}

func ids(t *testing.T, db *pgx.Conn, table string) []int64 {
	t.Helper()
	return queryInts(t, db, "SELECT id FROM "+pgx.Identifier{table}.Sanitize())
}

func wantIDs(t *testing.T, db *pgx.Conn, table string, want ...int64) {
	t.Helper()
	if got := ids(t, db, table); !slices.Equal(got, want) {
		t.Fatalf("table %s holds ids %v, want %v", table, got, want)
	}
}

func wantPrepared(t *testing.T, db *pgx.Conn, prefix string, want ...string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	if got := prepared(t, db, prefix); !slices.Equal(got, want) && len(got)+len(want) > 0 {
		t.Fatalf("prepared transactions under %s: %v, want %v", prefix, got, want)
	}
}

// TestCaseA_CrashAfterPreCommitRollsBack: the task dies after PREPARE,
// before its checkpoint completes. The previous checkpoint recorded the
// transaction as open, so the restore aborts it: ROLLBACK PREPARED, rows
// gone. The unprepared transaction begun after it dies with its
// connection.
func TestCaseA_CrashAfterPreCommitRollsBack(t *testing.T) {
	db, prefix, table := protocolTable(t)
	s1 := newIDSink(t, prefix, table, 0, 1)
	committed := s1.prepare(1, 2)
	s1.must("commit", s1.Commit(context.Background(), committed))
	txn := s1.prepare(3, 4, 5)
	next, err := s1.Begin(context.Background())
	s1.must("begin", err)
	s1.must("write", s1.Write(context.Background(), next, []int64{6}))
	s1.must("flush", s1.flush(context.Background())) // BEGIN and COPY went out
	s1.Close(context.Background())                   // the crash
	wantPrepared(t, db, prefix, txn.GID)

	s2 := newIDSink(t, prefix, table, 0, 1, txn)
	wantPrepared(t, db, prefix, txn.GID) // restored: Open leaves it to the operator
	s2.must("abort restored", s2.Abort(context.Background(), txn))
	s2.must("abort again", s2.Abort(context.Background(), txn))
	wantPrepared(t, db, prefix)
	wantIDs(t, db, table, 1, 2)
	after, err := s2.Begin(context.Background())
	s2.must("begin", err)
	if after.Seq <= txn.Seq {
		t.Errorf("new transaction %s reuses a sequence number at or below the restored %s", after.GID, txn.GID)
	}
}

// TestCaseA_NoCheckpointRollsBackLeftover: as case A, but no checkpoint
// completed before the crash, so nothing is restored; Open rolls the
// leftover back by itself.
func TestCaseA_NoCheckpointRollsBackLeftover(t *testing.T) {
	db, prefix, table := protocolTable(t)
	s1 := newIDSink(t, prefix, table, 0, 1)
	s1.prepare(1)
	s1.Close(context.Background())
	newIDSink(t, prefix, table, 0, 1)
	wantPrepared(t, db, prefix)
	wantIDs(t, db, table)
}

// TestCaseB_CrashAroundCommit: the checkpoint completed; the task died
// before COMMIT PREPARED (first transaction) or right after it (second).
// The restore commits both: one for real, one found committed by its
// marker. Committing again succeeds; aborting either now is refused with
// weir.ErrAlreadyCommitted.
func TestCaseB_CrashAroundCommit(t *testing.T) {
	db, prefix, table := protocolTable(t)
	s1 := newIDSink(t, prefix, table, 0, 1)
	before := s1.prepare(1, 2)
	after := s1.prepare(3)
	s1.must("commit", s1.Commit(context.Background(), after))
	s1.Close(context.Background())

	s2 := newIDSink(t, prefix, table, 0, 1, before, after)
	for _, txn := range []Txn{before, after, before, after} {
		s2.must("commit restored "+txn.GID, s2.Commit(context.Background(), txn))
	}
	wantPrepared(t, db, prefix)
	wantIDs(t, db, table, 1, 2, 3)
	for _, txn := range []Txn{before, after} {
		err := s2.Abort(context.Background(), txn)
		if !errors.Is(err, weir.ErrAlreadyCommitted) || !strings.Contains(err.Error(), txn.GID) {
			t.Errorf("Abort(%s) of a committed transaction = %v, want an error naming it and wrapping weir.ErrAlreadyCommitted", txn.GID, err)
		}
	}
	wantIDs(t, db, table, 1, 2, 3)
}

// TestCommitLost: committing a transaction that is neither prepared nor
// committed fails naming it, with weir.ErrTransactionLost.
func TestCommitLost(t *testing.T) {
	db, prefix, table := protocolTable(t)
	s := newIDSink(t, prefix, table, 0, 1)
	txn := s.prepare(1)
	exec(t, db, "ROLLBACK PREPARED "+quoteLiteral(txn.GID)) // by hand
	err := s.Commit(context.Background(), txn)
	if !errors.Is(err, weir.ErrTransactionLost) || !strings.Contains(err.Error(), txn.GID) {
		t.Fatalf("Commit of a transaction rolled back by hand = %v, want weir.ErrTransactionLost naming %s", err, txn.GID)
	}
	s.must("abort of a rolled back transaction", s.Abort(context.Background(), txn))
	wantIDs(t, db, table)
}

// TestEmptyTransactions: checkpoints without records still prepare and
// commit (the marker row alone), and aborting an empty open transaction
// sends nothing.
func TestEmptyTransactions(t *testing.T) {
	db, prefix, table := protocolTable(t)
	s := newIDSink(t, prefix, table, 0, 1)
	for range 3 {
		txn := s.prepare()
		s.must("commit empty", s.Commit(context.Background(), txn))
		s.must("commit empty again", s.Commit(context.Background(), txn))
	}
	open, err := s.Begin(context.Background())
	s.must("begin", err)
	s.must("abort empty open", s.Abort(context.Background(), open))
	wantPrepared(t, db, prefix)
	wantIDs(t, db, table)
	if got := queryInts(t, db, "SELECT rows FROM weir_sink_commits WHERE sink = $1", prefix+":pg"); !slices.Equal(got, []int64{0, 0, 0}) {
		t.Errorf("marker rows count %v rows, want three empty transactions", got)
	}
}

// TestOpenAbortsOpenTransaction: aborting the open transaction after rows
// went out rolls it back on its connection; the sink goes on.
func TestOpenAbortsOpenTransaction(t *testing.T) {
	db, prefix, table := protocolTable(t)
	s := newIDSink(t, prefix, table, 0, 1)
	txn, err := s.Begin(context.Background())
	s.must("begin", err)
	s.must("write", s.Write(context.Background(), txn, []int64{7}))
	s.must("flush", s.flush(context.Background()))
	s.must("abort open", s.Abort(context.Background(), txn))
	if err := s.Write(context.Background(), txn, []int64{8}); err == nil {
		t.Fatal("Write to an aborted transaction succeeded")
	}
	s.must("commit next", s.Commit(context.Background(), s.prepare(9)))
	wantIDs(t, db, table, 9)
	wantPrepared(t, db, prefix)
}

// TestSequenceContinuesAfterCommitted: a fresh start (nothing restored)
// numbers its transactions after every committed one, found by marker,
// so a new id never names an old transaction.
func TestSequenceContinuesAfterCommitted(t *testing.T) {
	_, prefix, table := protocolTable(t)
	s1 := newIDSink(t, prefix, table, 1, 2)
	var last Txn
	for i := range 3 {
		last = s1.prepare(int64(i))
		s1.must("commit", s1.Commit(context.Background(), last))
	}
	s1.Close(context.Background())
	s2 := newIDSink(t, prefix, table, 1, 2)
	txn, err := s2.Begin(context.Background())
	s2.must("begin", err)
	if want := gidOf(prefix+":pg", 1, last.Seq+1); txn.GID != want || txn.Seq != last.Seq+1 {
		t.Fatalf("after committing %s a new sink begins %+v, want %s", last.GID, txn, want)
	}
}

// TestScaleInRollsBackLeftovers: three subtasks leave prepared
// transactions; the job restores at parallelism 2. Old subtask 2's
// handles go to new subtask 0 (2 mod 2), which commits the one the
// checkpoint pre-committed and rolls back the rest of 2's. New subtask 1,
// opened first, must not touch subtask 2's transactions, one of which is
// still to be committed.
func TestScaleInRollsBackLeftovers(t *testing.T) {
	db, prefix, table := protocolTable(t)
	var old [3]idSink
	for i := range old {
		old[i] = newIDSink(t, prefix, table, i, 3)
	}
	keep := old[2].prepare(20, 21) // pre-committed by a completed checkpoint
	open2 := old[2].prepare(22)    // pre-committed later, recorded as open
	orphan2 := old[2].prepare(23)  // never recorded
	orphan0 := old[0].prepare(1)
	orphan1 := old[1].prepare(10)
	for _, s := range old {
		s.Close(context.Background())
	}
	wantPrepared(t, db, prefix, keep.GID, open2.GID, orphan2.GID, orphan0.GID, orphan1.GID)

	newIDSink(t, prefix, table, 1, 2)
	wantPrepared(t, db, prefix, keep.GID, open2.GID, orphan2.GID, orphan0.GID)
	s0 := newIDSink(t, prefix, table, 0, 2, keep, open2)
	wantPrepared(t, db, prefix, keep.GID, open2.GID)
	s0.must("commit restored", s0.Commit(context.Background(), keep))
	s0.must("abort restored", s0.Abort(context.Background(), open2))
	wantPrepared(t, db, prefix)
	wantIDs(t, db, table, 20, 21)
}

// TestUnsafeRestoreLeavesLeftovers: a restored handle of a subtask this
// one would not inherit means the engine deals handles out differently
// than the sink assumes; the sink then rolls back nothing.
func TestUnsafeRestoreLeavesLeftovers(t *testing.T) {
	db, prefix, table := protocolTable(t)
	old := newIDSink(t, prefix, table, 1, 2)
	handle := old.prepare(1)
	orphan := old.prepare(2)
	old.Close(context.Background())
	s := newIDSink(t, prefix, table, 0, 2, handle) // 1 mod 2 != 0
	wantPrepared(t, db, prefix, handle.GID, orphan.GID)
	s.must("commit", s.Commit(context.Background(), handle))
	exec(t, db, "ROLLBACK PREPARED "+quoteLiteral(orphan.GID))
}

// TestWriteChecksHandleAndRow: writes to a handle that is not the open
// transaction, and a row function that appends the wrong number of values,
// are refused with what to fix.
func TestWriteChecksHandleAndRow(t *testing.T) {
	_, prefix, table := protocolTable(t)
	s := newIDSink(t, prefix, table, 0, 1)
	txn := s.prepare(1)
	if err := s.Write(context.Background(), txn, []int64{2}); err == nil || !strings.Contains(err.Error(), "not the open transaction") {
		t.Errorf("Write to a pre-committed transaction = %v", err)
	}
	if err := s.Commit(context.Background(), Txn{GID: "x"}); err == nil {
		t.Error("Commit of a foreign id succeeded")
	}
	s.must("commit", s.Commit(context.Background(), txn))
	s.row = func(v int64, dst []any) []any { return append(dst, v, v) }
	next, err := s.Begin(context.Background())
	s.must("begin", err)
	err = s.Write(context.Background(), next, []int64{3})
	if err == nil || !strings.Contains(err.Error(), "appended 2 values for 1 columns") {
		t.Errorf("Write with a row function appending 2 values for 1 column = %v", err)
	}
	s.must("abort", s.Abort(context.Background(), next))
}
