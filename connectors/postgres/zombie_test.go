package postgres

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestZombiePrepareAfterTheNextAttemptOpened: an attempt of a subtask
// that was declared dead (a zombie: paused past the heartbeat timeout,
// partitioned) prepares its transaction after the next attempt of the
// same subtask opened. PostgreSQL has no producer epoch to fence it, so
// the zombie's PREPARE succeeds; what must hold is that nothing is lost,
// nothing is duplicated, and nothing hangs:
//
//   - the next attempt picked the same transaction id (the zombie's was
//     not visible at its Open); its PreCommit meets the zombie's
//     uncommitted marker row and fails within the sink's timeout rather
//     than wait on a prepared transaction forever;
//   - the attempt after that (the failover the error causes) rolls the
//     zombie's prepared transaction back at Open, since no checkpoint
//     holds it, and its own output commits; the zombie's rows never
//     become visible.
func TestZombiePrepareAfterTheNextAttemptOpened(t *testing.T) {
	db, prefix, table := protocolTable(t)
	open := func() idSink {
		t.Helper()
		f := ExactlyOnce(testConnString(), table, []string{"id"},
			func(v int64, dst []any) []any { return append(dst, v) },
			WithTransactionPrefix(prefix), WithCreateTable("id bigint"), WithTimeout(2*time.Second))
		s := f().(*exactlyOnce[int64])
		if err := s.open(context.Background(), "pg", 0, 1, nil, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		return idSink{s, t}
	}
	ctx := context.Background()
	zombie := open()
	zt, err := zombie.Begin(ctx)
	zombie.must("zombie begin", err)
	zombie.must("zombie write", zombie.Write(ctx, zt, []int64{100, 101}))

	next := open()
	zombie.must("zombie pre-commit after the next attempt opened", zombie.PreCommit(ctx, zt))
	wantPrepared(t, db, prefix, zt.GID)

	nt, err := next.Begin(ctx)
	next.must("next begin", err)
	if nt.GID != zt.GID {
		t.Fatalf("the next attempt chose %s, the zombie %s: the case is their collision (both start after the same checkpoint)", nt.GID, zt.GID)
	}
	next.must("next write", next.Write(ctx, nt, []int64{1}))
	start := time.Now()
	err = next.PreCommit(ctx, nt)
	took := time.Since(start)
	if err == nil {
		t.Fatalf("the next attempt prepared %s, which the zombie holds prepared", nt.GID)
	}
	if !strings.Contains(err.Error(), nt.GID) || !strings.Contains(err.Error(), "another attempt") {
		t.Errorf("pre-commit error %q does not name the transaction %s and the likely holder", err, nt.GID)
	}
	if took > 10*time.Second {
		t.Fatalf("the next attempt's pre-commit took %s: it waited on the zombie's prepared transaction beyond the sink's timeout (2 s)", took)
	}
	t.Logf("next attempt's pre-commit of %s after %s: %v", nt.GID, took.Round(time.Millisecond), err)

	// The failover: the next attempt's next attempt restores nothing
	// (no checkpoint completed) and rolls back every leftover.
	final := open()
	wantPrepared(t, db, prefix)
	txn := final.prepare(1, 2)
	final.must("commit", final.Commit(ctx, txn))
	wantIDs(t, db, table, 1, 2)
	wantPrepared(t, db, prefix)
}
