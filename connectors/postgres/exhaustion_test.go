package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	cfgkeys "github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/testutil"
	"github.com/weirstream/weir/internal/testutil/pgtest"
)

// TestMaxPreparedTransactionsExhausted: the server's prepared-transaction
// slots run out mid-run (fault class 15). A cluster of the test's own
// (not the shared one, whose slots other packages' tests use at the same
// time) allows two prepared transactions; a dummy PREPARE TRANSACTION
// holds one, so the exactly-once sink at parallelism 2 can never prepare
// both subtasks' transactions of a checkpoint. PostgreSQL rolls back a
// transaction whose PREPARE finds no slot, so its rows are gone from the
// server: the sink must not let that checkpoint complete.
//
// What must hold: the job fails within its restart budget (it does not
// hang), with an error that names max_prepared_transactions and how to
// raise it; the table holds a sub-multiset of the failure-free output
// (here nothing: no checkpoint completed) with no duplicate. Then the
// test follows the error's advice (ALTER SYSTEM, restart the server) and
// reruns the job on the same checkpoint folder: the failure-free output
// exactly, and no prepared transaction of the sink left (the failed run's
// last one is rolled back at the rerun's Open).
func TestMaxPreparedTransactionsExhausted(t *testing.T) {
	if testing.Short() {
		t.Skip("creates a PostgreSQL cluster of its own")
	}
	c := pgtest.NewCluster(t, "max_prepared_transactions=2")
	db := c.Connect(t)
	exec(t, db, "CREATE TABLE weir_filler (x int)")
	exec(t, db, "BEGIN")
	exec(t, db, "INSERT INTO weir_filler VALUES (1)")
	exec(t, db, "PREPARE TRANSACTION 'filler'")

	const n, k, p = 20_000, 37, 2
	const table = "weir_t_exhausted"
	j := newJob(t, n, k, p, func(s weir.Stream[demo.Result]) {
		weir.SinkToTransactional(s, ExactlyOnce(c.Conn, table, demoColumns, demoRow,
			WithTransactionPrefix(table), WithCreateTable(demoTable), WithBatchRows(2000))).Name("pg").UID("pg")
	})
	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, p, j.stateDir, "10ms", false,
		map[string]string{cfgkeys.FixedDelayAttempts: "3", cfgkeys.FixedDelayDelay: "10ms"})))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := j.runEnv(t, ctx, env)
	if res.err == nil {
		t.Fatalf("the job finished with one free prepared-transaction slot for two subtasks\nlog:\n%s", res.log)
	}
	if ctx.Err() != nil {
		t.Fatalf("the job hung until the test's deadline: %v\nlog:\n%s", res.err, tail(res.log.String(), 4000))
	}
	msg := res.err.Error()
	for _, want := range []string{"max_prepared_transactions", "ALTER SYSTEM SET max_prepared_transactions", "pg_prepared_xacts"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the job's error does not say %q: %v", want, res.err)
		}
	}
	got := resultLines(t, db, table)
	if d := demo.Excess(demo.Expected(n, k), got); d != "" {
		t.Fatalf("table %s: %s", table, d)
	}
	t.Logf("failed after %d restarts in %v, %d of %d rows committed: %v", res.restarts, res.elapsed.Round(time.Millisecond), len(got), n, res.err)

	exec(t, db, "ALTER SYSTEM SET max_prepared_transactions = 8")
	c.Ctl(t, "restart")
	db = c.Connect(t)
	rerun := j.run(t, ctx, nil)
	if rerun.err != nil {
		t.Fatalf("rerun with max_prepared_transactions = 8: %v\nlog:\n%s", rerun.err, tail(rerun.log.String(), 4000))
	}
	if d := demo.Diff(demo.Expected(n, k), resultLines(t, db, table)); d != "" {
		t.Fatalf("table %s after the rerun differs from the failure-free output: %s", table, d)
	}
	if left := prepared(t, db, table); len(left) > 0 {
		t.Fatalf("prepared transactions of the sink left behind: %v", left)
	}
	t.Logf("rerun: %d rows exact in %v, %d restarts", n, rerun.elapsed.Round(time.Millisecond), rerun.restarts)
}

func tail(s string, n int) string {
	if len(s) > n {
		return fmt.Sprint("…", s[len(s)-n:])
	}
	return s
}
