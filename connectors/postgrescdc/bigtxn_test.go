package postgrescdc

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/testutil"
)

// TestLargeTransactions: transactions of thousands of changes, more than
// a batch, are emitted over many reads with checkpoints in between, and
// failures strike inside them: a restore resumes inside the transaction
// after the changes the checkpoint counted. The replica equals the
// source, and the committed changelog replays cleanly with no change
// twice.
func TestLargeTransactions(t *testing.T) {
	src, name := newDB(t)
	dst, _ := newDB(t)
	srcDB := connect(t, src)
	createTables(t, srcDB, 3000)
	p := newProbe()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 1, filepath.Join(t.TempDir(), "state"), "10ms", false, nil)))
	log, inj := testutil.Observe(env, &faults.Plan{Failures: 4, Seed: 5, Span: 13000, Points: []faults.Point{faults.Process, faults.AfterPreCommit}, OnePerAttempt: true})
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Let the snapshot finish first: these transactions are for the
		// log.
		time.Sleep(1500 * time.Millisecond)
		for i := 0; i < 6 && ctx.Err() == nil; i++ {
			tx, err := srcDB.Begin(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			for _, sql := range []string{
				"UPDATE items SET v = v + 1, s = s || '+' WHERE id % 2 = $1",
				"DELETE FROM pairs WHERE a = $1 + 1",
				"INSERT INTO pairs SELECT $1 + 1, b, -1 FROM generate_series(1, 20) b",
			} {
				if _, err := tx.Exec(ctx, sql, i%2); err != nil {
					t.Error(err)
				}
			}
			if err := tx.Commit(ctx); err != nil {
				t.Error(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	err := runJob(t, ctx, env, src, dst, "s_"+name, p.options(), WithChunkRows(500), WithIdleTimeout(2500*time.Millisecond))
	<-done
	if err != nil {
		t.Fatalf("job: %v\n%s", err, tail(log.String()))
	}
	p.mu.Lock()
	partial := p.partial
	p.mu.Unlock()
	t.Logf("%d injected failures fired; %d checkpoints fell inside a transaction", inj.Fired(), partial)
	if partial == 0 {
		t.Errorf("no checkpoint fell inside a transaction: the test did not test that")
	}
	checkReplica(t, srcDB, connect(t, dst))
	checkJournal(t, srcDB, connect(t, dst))
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.bad {
		t.Error(b)
	}
}
