package postgres

import (
	"context"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// BenchmarkSinks runs the demo pipeline (200,000 events, 1,000 accounts,
// parallelism 1, a checkpoint every 200 ms) into each kind of sink and
// reports records per second end to end. The engine alone runs the demo
// at millions of records per second, so the figures are the sinks'.
// upsert-by-i writes every record as a new row (key i); upsert-by-account
// folds each checkpoint interval's records to one row per account before
// writing, so it writes far fewer rows. Run with
//
//	go test -run '^$' -bench Sinks -benchtime 3x ./connectors/postgres
func BenchmarkSinks(b *testing.B) {
	needServer(b, true)
	const n, k = 200_000, 1000
	db := testDB(b)
	cases := []struct {
		name string
		sink func(table string) func(weir.Stream[demo.Result])
	}{
		{"exactly-once", func(table string) func(weir.Stream[demo.Result]) { return exactlyOnceSink(table, table) }},
		{"upsert-by-i", func(table string) func(weir.Stream[demo.Result]) {
			return func(s weir.Stream[demo.Result]) {
				weir.SinkTo(s, Upsert(testConnString(), table, demoColumns, []string{"i"}, demoRow,
					WithCreateTable(demoTable+", PRIMARY KEY (i)"))).UID("pg")
			}
		}},
		{"upsert-by-account", func(table string) func(weir.Stream[demo.Result]) { return upsertDemo(table) }},
		{"at-least-once", func(table string) func(weir.Stream[demo.Result]) {
			return func(s weir.Stream[demo.Result]) {
				weir.SinkTo(s, AtLeastOnce(testConnString(), table, demoColumns, demoRow, WithCreateTable(demoTable))).UID("pg")
			}
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			table := "weir_b_" + map[string]string{"exactly-once": "eo", "upsert-by-i": "up_i", "upsert-by-account": "up_acct", "at-least-once": "alo"}[c.name]
			var records, seconds float64
			for b.Loop() {
				b.StopTimer()
				resetSink(b, db, table, table)
				j := newJob(b, n, k, 1, c.sink(table))
				j.interval = "200ms"
				b.StartTimer()
				res := j.run(b, context.Background(), nil)
				if res.err != nil {
					b.Fatalf("Execute: %v", res.err)
				}
				records += n
				seconds += res.elapsed.Seconds()
			}
			b.ReportMetric(records/seconds, "records/s")
		})
	}
}
