package postgrescdc

import (
	"context"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testutil"
)

// countSink counts what reaches it.
type countSink struct{ n *atomic.Int64 }

func (s countSink) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (s countSink) Write(_ context.Context, b []Change) error {
	s.n.Add(int64(len(b)))
	return nil
}
func (s countSink) Flush(context.Context) error { return nil }
func (s countSink) Close(context.Context) error { return nil }

// BenchmarkSnapshotVsCopy measures the snapshot's rows/s (source →
// a sink that counts; checkpoints every second) against COPY table TO
// STDOUT of the same table into io.Discard, in the same run, in
// alternating rounds. WEIR_CDC_BENCH_ROWS sets the table's size
// (default 500,000). Run with -benchtime=1x; see BENCHMARKS.md.
func BenchmarkSnapshotVsCopy(b *testing.B) {
	rows := 500_000
	if s := os.Getenv("WEIR_CDC_BENCH_ROWS"); s != "" {
		rows, _ = strconv.Atoi(s)
	}
	src, name := newDB(b)
	db := connect(b, src)
	exec(b, db, "CREATE TABLE bench (id bigint PRIMARY KEY, account int, amount numeric(12,2), note text, at timestamptz)")
	exec(b, db, "INSERT INTO bench SELECT i, i % 1000, i / 100.0, 'note ' || i, now() FROM generate_series(1, $1) i", rows)
	exec(b, db, "VACUUM ANALYZE bench")
	ctx := context.Background()
	var copyRate, snapRate []float64
	for round := 0; round < 3; round++ {
		start := time.Now()
		if _, err := db.PgConn().CopyTo(ctx, io.Discard, "COPY bench TO STDOUT"); err != nil {
			b.Fatal(err)
		}
		copyRate = append(copyRate, float64(rows)/time.Since(start).Seconds())

		cfg := testutil.FaultConfig(b, 1, b.TempDir(), "1s", true, map[string]string{"pipeline.batch-size": "1024"})
		env := weir.NewEnv(weir.WithConfig(cfg))
		var n atomic.Int64
		slot := "bench_" + name + "_" + strconv.Itoa(round)
		s := weir.FromSource(env, Source(src, []string{"bench"}, WithSlot(slot), WithPublication("benchpub"), WithCreateSlot(), WithCreatePublication(),
			WithChunkRows(8192), WithIdleTimeout(time.Millisecond)))
		weir.SinkTo(s, func() weir.Sink[Change] { return countSink{&n} })
		start = time.Now()
		if err := env.Execute(ctx, "cdcbench"); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		if n.Load() != int64(rows) {
			b.Fatalf("snapshot emitted %d rows, want %d", n.Load(), rows)
		}
		snapRate = append(snapRate, float64(rows)/el.Seconds())
		exec(b, db, "SELECT pg_drop_replication_slot($1)", slot)
	}
	med := func(x []float64) float64 {
		for i := range x {
			for j := i + 1; j < len(x); j++ {
				if x[j] < x[i] {
					x[i], x[j] = x[j], x[i]
				}
			}
		}
		return x[len(x)/2]
	}
	c, sn := med(copyRate), med(snapRate)
	b.ReportMetric(c, "copy-rows/s")
	b.ReportMetric(sn, "snapshot-rows/s")
	b.ReportMetric(sn/c, "ratio")
	b.Logf("rows %d: COPY TO %.0f rows/s, snapshot %.0f rows/s, ratio %.2f (medians of 3 rounds)", rows, c, sn, sn/c)
}
