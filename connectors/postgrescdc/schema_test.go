package postgrescdc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/testutil"
)

// TestSchemaChange: a column added mid-stream reaches the replica (the
// changes carry it and the sink adds it); columns added with a DEFAULT,
// which fills the existing rows at the source without a change in the
// log, fill the replica's existing rows the same way; a column dropped
// mid-stream stays in the replica; and the replica equals the source on
// the source's columns, with failures injected around the changes.
func TestSchemaChange(t *testing.T) {
	src, name := newDB(t)
	dst, _ := newDB(t)
	srcDB := connect(t, src)
	exec(t, srcDB, "CREATE TABLE evo (id int PRIMARY KEY, a text, n int)")
	exec(t, srcDB, "INSERT INTO evo SELECT i, 'a' || i, i FROM generate_series(1, 200) i")
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 1, t.TempDir(), "20ms", false, nil)))
	log, _ := testutil.Observe(env, &faults.Plan{Failures: 3, Seed: 3, Span: 600, Points: []faults.Point{faults.Process, faults.AfterPreCommit}, OnePerAttempt: true})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		step := func(sql string, args ...any) {
			if _, err := srcDB.Exec(ctx, sql, args...); err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", sql, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		for i := 201; i <= 300; i++ {
			step("INSERT INTO evo VALUES ($1, $2, $1)", i, fmt.Sprint("a", i))
		}
		step("ALTER TABLE evo ADD COLUMN b int")
		for i := 301; i <= 400; i++ {
			step("INSERT INTO evo (id, a, n, b) VALUES ($1, 'x', $1, $1 * 2)", i)
			step("UPDATE evo SET b = b + 1, n = n + 1 WHERE id = $1", i-150)
		}
		step("ALTER TABLE evo DROP COLUMN a")
		for i := 401; i <= 450; i++ {
			step("INSERT INTO evo (id, n, b) VALUES ($1, $1, 0)", i)
			step("DELETE FROM evo WHERE id = $1", i-400)
		}
		step("ALTER TABLE evo ADD COLUMN c int DEFAULT 7")
		step("ALTER TABLE evo ADD COLUMN d text DEFAULT 'it''s, {quoted}'")
		for i := 451; i <= 480; i++ {
			step("INSERT INTO evo (id, n, b, c) VALUES ($1, $1, 0, $1)", i)
			step("UPDATE evo SET n = n + 1 WHERE id = $1", i-300)
		}
	}()
	reg := prometheus.NewRegistry()
	s := weir.FromSource(env, Source(src, []string{"evo"}, WithMetrics(reg), WithStatusInterval(100*time.Millisecond), WithSlot("s_"+name), WithCreateSlot(), WithCreatePublication(), WithChunkRows(50), WithIdleTimeout(1500*time.Millisecond))).Name("cdc").UID("cdc")
	weir.SinkToTransactional(s, Replica(dst)).Name("replica").UID("replica")
	err := env.Execute(ctx, "cdcschema")
	wg.Wait()
	if err != nil {
		t.Fatalf("job: %v\n%s", err, tail(log.String()))
	}
	dstDB := connect(t, dst)
	want := tableText(t, srcDB, "evo", []string{"id", "n", "b", "c", "d"}, "id")
	got := tableText(t, dstDB, "evo", []string{"id", "n", "b", "c", "d"}, "id")
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("replica differs from the source:\n%s", diffLines(want, got))
	}
	rows, err := dstDB.Query(context.Background(), "SELECT attname FROM pg_attribute WHERE attrelid = 'evo'::regclass AND attnum > 0 AND NOT attisdropped")
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for rows.Next() {
		var c string
		rows.Scan(&c)
		cols = append(cols, c)
	}
	rows.Close()
	slices.Sort(cols)
	if !slices.Equal(cols, []string{"a", "b", "c", "d", "id", "n"}) {
		t.Errorf("replica columns %v, want a (dropped at the source, kept), b, c and d (added), id, n", cols)
	}
	checkMetrics(t, reg)
	if !strings.Contains(log.String(), "added a column the source added") {
		t.Errorf("the sink did not log adding column b")
	}
}
