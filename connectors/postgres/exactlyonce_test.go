package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// exactlyOnceSink adds the exactly-once sink into table under prefix.
func exactlyOnceSink(prefix, table string) func(weir.Stream[demo.Result]) {
	return func(s weir.Stream[demo.Result]) {
		weir.SinkToTransactional(s, ExactlyOnce(testConnString(), table, demoColumns, demoRow,
			WithTransactionPrefix(prefix), WithCreateTable(demoTable), WithBatchRows(2000))).Name("pg").UID("pg")
	}
}

// TestExactlyOnceUnderFaults runs the demo into PostgreSQL with failures
// at each fault point alone, at parallelism 1 and 2, and requires the
// table to hold exactly the failure-free output (as a multiset) and no
// prepared transaction of the sink to be left. Case A is a crash after
// PREPARE before the checkpoint completes (rolled back on restore), case B
// a crash when the checkpoint completed, before COMMIT PREPARED (committed
// on restore).
func TestExactlyOnceUnderFaults(t *testing.T) {
	needServer(t, true)
	const (
		n        = 30_000
		k        = 37
		failures = 3
	)
	want := demo.Expected(n, k)
	cases := []struct {
		name  string
		point faults.Point
	}{
		{"none", ""},
		{"process-record", faults.Process},
		{"snapshot-sync", faults.SnapshotSync},
		{"snapshot-async", faults.SnapshotAsync},
		{"caseA-after-precommit", faults.AfterPreCommit},
		{"caseB-commit", faults.Commit},
	}
	db := testDB(t)
	fromCheckpoint := 0
	for _, c := range cases {
		for p := 1; p <= 2; p++ {
			t.Run(fmt.Sprintf("%s/p%d", c.name, p), func(t *testing.T) {
				table := strings.ReplaceAll(fmt.Sprintf("weir_t_eo_%s_p%d", c.name, p), "-", "_")
				resetSink(t, db, table, table)
				j := newJob(t, n, k, p, exactlyOnceSink(table, table))
				nf := 0
				if c.point != "" {
					nf = failures
					j.plan = onePoint(nf, int64(31*p+len(c.name)), n, c.point)
				}
				res := j.run(t, context.Background(), nil)
				if res.err != nil {
					t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
				}
				if res.inj != nil && res.inj.Fired() != nf {
					t.Errorf("%d of %d failures fired: %v", res.inj.Fired(), nf, res.inj.Log())
				}
				if res.restarts != int64(nf) {
					t.Errorf("restarts = %d, want %d\nlog:\n%s", res.restarts, nf, res.log)
				}
				if d := demo.Diff(want, resultLines(t, db, table)); d != "" {
					t.Fatalf("table %s differs from the failure-free output: %s", table, d)
				}
				if left := prepared(t, db, table); len(left) > 0 {
					t.Fatalf("prepared transactions left behind: %v", left)
				}
				restored := len(restoredPaths(res.log.String()))
				fromCheckpoint += restored
				t.Logf("%d rows exact, %d restarts (%d from a checkpoint), %d checkpoints, %v; fired %v",
					n, res.restarts, restored, hooks.Plan(res.env).Status.CompletedCheckpoints.Load(), res.elapsed.Round(time.Millisecond), res.inj.Log())
			})
		}
	}
	// Which failure lands after a completed checkpoint depends on timing;
	// over all cases many must, or the restore path went untested.
	if !t.Failed() && fromCheckpoint < 15 {
		t.Errorf("only %d of %d restores came from a checkpoint", fromCheckpoint, 2*failures*(len(cases)-1))
	}
}

// TestExactlyOnceRestoreSameCheckpointTwice: a rate-limited run is
// cancelled after some checkpoints; a second run restores the newest
// checkpoint (committing what it pre-committed, aborting what it had open)
// and fails before taking a checkpoint of its own; a third restores the
// same checkpoint again, so every commit and abort runs a second time,
// and finishes. The table must hold exactly the failure-free output.
func TestExactlyOnceRestoreSameCheckpointTwice(t *testing.T) {
	needServer(t, true)
	const n, k = 20_000, 37
	db := testDB(t)
	table := "weir_t_eo_restore_twice"
	resetSink(t, db, table, table)
	j := newJob(t, n, k, 2, exactlyOnceSink(table, table))
	j.rate = 40_000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := j.run(t, ctx, func(env *weir.Env) {
		waitFor(ctx, func() bool { return hooks.Plan(env).Status.CompletedCheckpoints.Load() >= 3 })
		cancel()
	})
	if !errors.Is(first.err, context.Canceled) {
		t.Fatalf("first run: %v, want context.Canceled", first.err)
	}
	if got := len(resultLines(t, db, table)); got >= n {
		t.Fatalf("first run committed all %d rows before the cancel; lower the rate", got)
	}

	j.rate, j.interval, j.restartNone = 0, "1h", true
	j.plan = onePoint(1, 1, 10, faults.Process)
	second := j.run(t, context.Background(), nil)
	if !errors.Is(second.err, faults.ErrInjected) {
		t.Fatalf("second run: %v, want the injected failure\nlog:\n%s", second.err, second.log)
	}
	if got := hooks.Plan(second.env).Status.CompletedCheckpoints.Load(); got != 0 {
		t.Fatalf("second run completed %d checkpoints; it must fail before its first", got)
	}

	j.interval, j.restartNone, j.plan = "10ms", false, nil
	third := j.run(t, context.Background(), nil)
	if third.err != nil {
		t.Fatalf("third run: %v\nlog:\n%s", third.err, third.log)
	}
	p2, p3 := restoredPaths(second.log.String()), restoredPaths(third.log.String())
	if len(p2) != 1 || len(p3) != 1 || p2[0] != p3[0] {
		t.Fatalf("runs 2 and 3 restored %v and %v; want the same single checkpoint", p2, p3)
	}
	if d := demo.Diff(demo.Expected(n, k), resultLines(t, db, table)); d != "" {
		t.Fatalf("table differs from the failure-free output: %s", d)
	}
	if left := prepared(t, db, table); len(left) > 0 {
		t.Fatalf("prepared transactions left behind: %v", left)
	}
	t.Logf("restored %s twice; exact", p3[0])
}

// waitFor polls cond every millisecond until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
