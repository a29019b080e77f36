package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// upsertSink adds an Upsert sink keyed by account into table.
func upsertDemo(table string, opts ...Option) func(weir.Stream[demo.Result]) {
	return func(s weir.Stream[demo.Result]) {
		opts = append([]Option{WithCreateTable(demoTable + ", PRIMARY KEY (account)")}, opts...)
		weir.SinkTo(s, Upsert(testConnString(), table, demoColumns, []string{"account"}, demoRow, opts...)).Name("pg").UID("pg")
	}
}

// lastPerAccount is the failure-free output's last line of every account:
// what an upsert keyed by account leaves.
func lastPerAccount(n, k int64) []string {
	last := map[string]string{}
	for _, l := range demo.Expected(n, k) {
		last[strings.Split(l, ",")[1]] = l
	}
	out := make([]string, 0, len(last))
	for _, l := range last {
		out = append(out, l)
	}
	return out
}

// TestUpsertUnderFaults: with failures at the points an at-least-once
// sink passes (record processing and both snapshot phases, where Flush
// runs), the table holds exactly one row per account with the values of
// its last event. A batch below the number of accounts per subtask makes
// the sink flush between checkpoints too, so replays really rewrite rows.
func TestUpsertUnderFaults(t *testing.T) {
	needServer(t, false)
	const n, k, failures = 10_000, 101, 3
	want := lastPerAccount(n, k)
	db := testDB(t)
	for _, point := range []faults.Point{faults.Process, faults.SnapshotSync, faults.SnapshotAsync} {
		for p := 1; p <= 2; p++ {
			t.Run(fmt.Sprintf("%s/p%d", point, p), func(t *testing.T) {
				table := strings.ReplaceAll(fmt.Sprintf("weir_t_up_%s_p%d", point, p), "-", "_")
				resetSink(t, db, table, table)
				j := newJob(t, n, k, p, upsertDemo(table, WithBatchRows(45)))
				j.plan = onePoint(failures, int64(7*p+len(point)), n, point)
				res := j.run(t, context.Background(), nil)
				if res.err != nil {
					t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
				}
				if res.inj.Fired() != failures || res.restarts != failures {
					t.Errorf("%d failures fired, %d restarts; want %d each\nlog:\n%s", res.inj.Fired(), res.restarts, failures, res.log)
				}
				if d := demo.Diff(want, resultLines(t, db, table)); d != "" {
					t.Fatalf("table %s is not one row per account with its final values: %s", table, d)
				}
				t.Logf("%d rows exact, %d restarts, %v", len(want), res.restarts, res.elapsed)
			})
		}
	}
}

// TestAtLeastOnceUnderFaults: every event's row is in the table at least
// once, and every row is one of the failure-free output's.
func TestAtLeastOnceUnderFaults(t *testing.T) {
	needServer(t, false)
	const n, k, failures = 20_000, 37, 3
	db := testDB(t)
	table := "weir_t_alo"
	resetSink(t, db, table, table)
	j := newJob(t, n, k, 2, func(s weir.Stream[demo.Result]) {
		weir.SinkTo(s, AtLeastOnce(testConnString(), table, demoColumns, demoRow, WithCreateTable(demoTable), WithBatchRows(500))).UID("pg")
	})
	j.plan = &faults.Plan{Failures: failures, Seed: 5, Span: n, Points: []faults.Point{faults.Process, faults.SnapshotSync, faults.SnapshotAsync}, OnePerAttempt: true}
	res := j.run(t, context.Background(), nil)
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	want := map[string]int{}
	for _, l := range demo.Expected(n, k) {
		want[l] = 0
	}
	got := resultLines(t, db, table)
	for _, l := range got {
		c, ok := want[l]
		if !ok {
			t.Fatalf("row %s is not in the failure-free output", l)
		}
		want[l] = c + 1
	}
	for l, c := range want {
		if c == 0 {
			t.Fatalf("row %s is missing: at-least-once lost it", l)
		}
	}
	t.Logf("%d rows for %d events (%d duplicates from replays), %d restarts", len(got), n, len(got)-n, res.restarts)
}
