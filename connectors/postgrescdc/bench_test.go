package postgrescdc

import (
	"context"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
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
// a sink that counts; checkpoints every second), with the
// parallelism-1 source and with a parallel snapshot of 2 readers
// (Capture, WithSnapshotParallelism), against COPY table TO
// STDOUT of the same table into io.Discard, in the same run, in
// alternating rounds. WEIR_CDC_BENCH_ROWS sets the table's size
// (default 500,000), WEIR_CDC_BENCH_READERS the reader counts (default
// "1,2"). Run with -benchtime=1x; see BENCHMARKS.md.
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
	readers := []int{1, 2}
	if s := os.Getenv("WEIR_CDC_BENCH_READERS"); s != "" {
		readers = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				b.Fatalf("WEIR_CDC_BENCH_READERS=%q: want reader counts, comma-separated", s)
			}
			readers = append(readers, n)
		}
	}
	var copyRate []float64
	snapRate := make([][]float64, len(readers))
	for round := 0; round < 3; round++ {
		start := time.Now()
		if _, err := db.PgConn().CopyTo(ctx, io.Discard, "COPY bench TO STDOUT"); err != nil {
			b.Fatal(err)
		}
		copyRate = append(copyRate, float64(rows)/time.Since(start).Seconds())

		for i, par := range readers {
			cfg := testutil.FaultConfig(b, 1, b.TempDir(), "1s", true, map[string]string{"pipeline.batch-size": "1024"})
			env := weir.NewEnv(weir.WithConfig(cfg))
			var n atomic.Int64
			slot := "bench_" + name + "_" + strconv.Itoa(round) + "_" + strconv.Itoa(par)
			// Capture with one reader is the parallelism-1 Source.
			s := Capture(env, "cdc", src, []string{"bench"}, WithSlot(slot), WithPublication("benchpub"), WithCreateSlot(), WithCreatePublication(),
				WithChunkRows(8192), WithIdleTimeout(time.Millisecond), WithSnapshotParallelism(par))
			weir.SinkTo(s, func() weir.Sink[Change] { return countSink{&n} }).Parallelism(1)
			start = time.Now()
			if err := env.Execute(ctx, "cdcbench"); err != nil {
				b.Fatal(err)
			}
			el := time.Since(start)
			if n.Load() != int64(rows) {
				b.Fatalf("snapshot with %d readers emitted %d rows, want %d", par, n.Load(), rows)
			}
			snapRate[i] = append(snapRate[i], float64(rows)/el.Seconds())
			// The server ends the slot's walsender a moment after the
			// job closed its connection.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				_, err := db.Exec(ctx, "SELECT pg_drop_replication_slot($1)", slot)
				if err == nil {
					break
				}
				if time.Now().After(deadline) || !strings.Contains(err.Error(), "is active") {
					b.Fatalf("drop slot %s: %v", slot, err)
				}
			}
		}
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
	c := med(copyRate)
	b.ReportMetric(c, "copy-rows/s")
	msg := ""
	for i, par := range readers {
		sn := med(snapRate[i])
		b.ReportMetric(sn, "snapshot-p"+strconv.Itoa(par)+"-rows/s")
		b.ReportMetric(sn/c, "ratio-p"+strconv.Itoa(par))
		msg += ", snapshot with " + strconv.Itoa(par) + " reader(s) " + strconv.FormatFloat(sn, 'f', 0, 64) + " rows/s (ratio " + strconv.FormatFloat(sn/c, 'f', 2, 64) + ")"
	}
	b.Logf("rows %d: COPY TO %.0f rows/s%s (medians of 3 rounds)", rows, c, msg)
}

// BenchmarkStreamingVsRecvLogical measures how fast the source decodes
// the log against pg_recvlogical, PostgreSQL's own client, reading the
// same changes through pgoutput into /dev/null: that is the server's own
// limit (the walsender decodes the WAL in one process for either client).
//
// A first run of the job on the empty table creates its slot and ends on
// its idle timeout; a second slot is created for pg_recvlogical; then
// WEIR_CDC_BENCH_ROWS rows (default 500,000) are inserted in transactions
// of 1,000 and updated once each, so both slots hold the same 2 × rows
// changes. pg_recvlogical reads them up to the insert position
// (--endpos); then the job resumes from its checkpoint and reads them
// into a sink that counts. Reported: change rows/s of each, and the
// source's CPU per change (this process's user + system time while the
// job ran; the job's only work is the source). Run with -benchtime=1x;
// see BENCHMARKS.md.
func BenchmarkStreamingVsRecvLogical(b *testing.B) {
	recv, err := osexec.LookPath("pg_recvlogical")
	if err != nil {
		b.Skipf("pg_recvlogical not found (%v): it ships with Debian's postgresql-client", err)
	}
	rows := 500_000
	if s := os.Getenv("WEIR_CDC_BENCH_ROWS"); s != "" {
		rows, _ = strconv.Atoi(s)
	}
	// WEIR_CDC_BENCH_READERS=N streams through a parallel snapshot's
	// graph (Capture with N readers: every change passes a reader).
	readers := 1
	if s := os.Getenv("WEIR_CDC_BENCH_READERS"); s != "" {
		readers, _ = strconv.Atoi(s)
	}
	src, name := newDB(b)
	db := connect(b, src)
	exec(b, db, "CREATE TABLE bench (id bigint PRIMARY KEY, account int, amount numeric(12,2), note text, at timestamptz)")
	ctx := context.Background()
	dir := b.TempDir()
	slot := "benchs_" + name
	var n atomic.Int64
	var reached atomic.Int64 // unix nanos when the sink counted every change
	want := int64(2 * rows)
	job := func(ctx context.Context, idle time.Duration) error {
		cfg := testutil.FaultConfig(b, 1, dir, "100ms", true, map[string]string{"pipeline.batch-size": "1024"})
		env := weir.NewEnv(weir.WithConfig(cfg))
		s := Capture(env, "cdc", src, []string{"bench"}, WithSlot(slot), WithPublication("benchspub"), WithCreateSlot(), WithCreatePublication(),
			WithIdleTimeout(idle), WithSnapshotParallelism(readers))
		weir.SinkTo(s, func() weir.Sink[Change] { return stampSink{n: &n, want: want, at: &reached} }).Parallelism(1)
		return env.Execute(ctx, "cdcstream")
	}
	// The first run creates the slot (the table is empty) and is
	// cancelled once a checkpoint holds its position.
	first, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- job(first, 0) }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(dir, "cdcstream", "chk-*", "_metadata")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the first run completed no checkpoint within a minute")
		}
	}
	cancel()
	<-done
	exec(b, db, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot+"_recv")
	for i := 0; i < rows; i += 1000 {
		exec(b, db, "INSERT INTO bench SELECT i, i % 1000, i / 100.0, 'note ' || i, now() FROM generate_series($1::bigint, $2::bigint) i", i+1, min(i+1000, rows))
	}
	for i := 0; i < rows; i += 1000 {
		exec(b, db, "UPDATE bench SET amount = amount + 1 WHERE id BETWEEN $1 AND $2", i+1, min(i+1000, rows))
	}
	var end string
	if err := db.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&end); err != nil {
		b.Fatal(err)
	}
	cmd := osexec.Command(recv, "-d", src, "--slot", slot+"_recv", "--start", "--endpos", end, "--no-loop",
		"-o", "proto_version=1", "-o", "publication_names=benchspub", "-f", "/dev/null")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("pg_recvlogical: %v: %s", err, out)
	}
	recvTook := time.Since(start)
	recvCPU := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()

	// The second run resumes from the first one's checkpoint.
	n.Store(0)
	cpu0 := processCPU(b)
	start = time.Now()
	if err := job(ctx, 3*time.Second); err != nil {
		b.Fatal(err)
	}
	cpu := processCPU(b) - cpu0
	if got := n.Load(); got != want {
		b.Fatalf("the source emitted %d changes, want %d", got, want)
	}
	took := time.Duration(reached.Load() - start.UnixNano())
	rr, wr := float64(want)/recvTook.Seconds(), float64(want)/took.Seconds()
	b.ReportMetric(rr, "recvlogical-rows/s")
	b.ReportMetric(wr, "source-rows/s")
	b.ReportMetric(wr/rr, "ratio")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(want), "source-cpu-ns/row")
	b.Logf("%d changes: pg_recvlogical %.0f rows/s (its own CPU %s), source %.0f rows/s (this process's CPU %s, %.0f ns per change: %.0f rows per core-second), ratio %.2f",
		want, rr, recvCPU.Round(time.Millisecond), wr, cpu.Round(time.Millisecond), float64(cpu.Nanoseconds())/float64(want), float64(want)/cpu.Seconds(), wr/rr)
}

// stampSink counts changes and records when the count reached want.
type stampSink struct {
	n    *atomic.Int64
	want int64
	at   *atomic.Int64
}

func (s stampSink) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (s stampSink) Write(_ context.Context, b []Change) error {
	if s.n.Add(int64(len(b))) >= s.want && s.at.Load() == 0 {
		s.at.Store(time.Now().UnixNano())
	}
	return nil
}
func (s stampSink) Flush(context.Context) error { return nil }
func (s stampSink) Close(context.Context) error { return nil }

// processCPU is this process's user + system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
