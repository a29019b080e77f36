package postgrescdc

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testutil"
)

// TestIdleSlotAdvances: while the captured table is idle and another
// table of the database is written, keepalives and standby status
// updates move the slot's confirmed position past that WAL (through
// completed checkpoints), so the server can recycle it; and the job ends
// FINISHED on WithIdleTimeout.
func TestIdleSlotAdvances(t *testing.T) {
	src, name := newDB(t)
	dst, _ := newDB(t)
	db := connect(t, src)
	exec(t, db, "CREATE TABLE captured (id int PRIMARY KEY)")
	exec(t, db, "INSERT INTO captured SELECT generate_series(1, 10)")
	exec(t, db, "CREATE TABLE other (id serial PRIMARY KEY, pad text)")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 1, t.TempDir(), "50ms", true, nil)))
	log, _ := testutil.Observe(env, nil)
	slot := "s_" + name
	var last string
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Bounded in time, not in rounds: the job ends 4 s after it
		// started to stream, and the slot must have confirmed the last
		// write by then.
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end) && ctx.Err() == nil; {
			if _, err := db.Exec(ctx, "INSERT INTO other (pad) SELECT repeat('x', 1000) FROM generate_series(1, 20)"); err != nil {
				t.Errorf("write the uncaptured table: %v", err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		db.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&last)
	}()
	// Event time from the commit time, as the package doc shows.
	ws := weir.ForBoundedOutOfOrderness[Change](time.Second).WithTimestampAssigner(func(c Change, _ int64) int64 { return c.Timestamp() })
	s := weir.FromSourceWithWatermarks(env, Source(src, []string{"captured"}, WithSlot(slot), WithCreateSlot(), WithCreatePublication(),
		WithIdleTimeout(4*time.Second), WithStatusInterval(100*time.Millisecond)), ws).Name("cdc").UID("cdc")
	weir.SinkToTransactional(s, Replica(dst)).Name("replica").UID("replica")
	err := env.Execute(ctx, "cdcidle")
	<-done
	if err != nil {
		t.Fatalf("job: %v\n%s", err, tail(log.String()))
	}
	var confirmed string
	if err := db.QueryRow(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&confirmed); err != nil {
		t.Fatal(err)
	}
	c, _ := parseLSN(confirmed)
	l, _ := parseLSN(last)
	if c < l {
		t.Errorf("slot confirmed %s, before the WAL written while the captured table was idle (up to %s)", confirmed, last)
	}
}
