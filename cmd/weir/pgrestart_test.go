package main

// PostgreSQL restarted under the exactly-once sink (issue 17, part 6).
//
// These tests restart and crash-stop a PostgreSQL server while the demo
// writes to it. They do not touch the shared server on 127.0.0.1:5432:
// go test ./... runs packages in parallel, and the PostgreSQL tests of
// connectors/postgres (and TestDemoPostgres here) would fail on a restart
// they did not ask for. Instead each test creates a throwaway cluster of
// its own (internal/testutil/pgtest), restarts that one, and drops it at
// the end; without root and Debian's postgresql-common tools the tests
// skip, saying why.

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/testutil/pgtest"
)

// TestPostgresRestart: the server is restarted (pg_ctlcluster restart, a
// fast shutdown that ends every session) while the demo writes through
// the exactly-once sink. The job fails over, restores its last checkpoint
// and finishes: exactly one row per event, no prepared transaction left.
func TestPostgresRestart(t *testing.T) {
	testPostgresOutage(t, func(c *pgtest.Cluster) { c.Ctl(t, "restart") })
}

// TestPostgresCrashStop: the same with the server crash-stopped
// (pg_ctlcluster stop -m immediate: no shutdown checkpoint, crash
// recovery at the next start) and started again a moment later. Prepared
// transactions survive the crash; the restore commits or rolls them back.
func TestPostgresCrashStop(t *testing.T) {
	testPostgresOutage(t, func(c *pgtest.Cluster) {
		c.Ctl(t, "stop", "-m", "immediate")
		time.Sleep(500 * time.Millisecond)
		c.Ctl(t, "start")
	})
}

// testPostgresOutage runs the demo into a fresh table of a cluster of its
// own, applies outage once checkpoints are being committed, and checks
// the table and the server's prepared transactions after the run.
func testPostgresOutage(t *testing.T, outage func(*pgtest.Cluster)) {
	if testing.Short() {
		t.Skip("restarts a PostgreSQL cluster of its own")
	}
	c := pgtest.NewCluster(t)
	const n, k = 40_000, 101
	table := "weir_restart"
	r := startWeir(t, 3*time.Minute, "run", "demo", "--sink", c.Conn+"&table="+table,
		"--events", fmt.Sprint(n), "--keys", fmt.Sprint(k), "--rate", "5000", "--parallelism", "2",
		"--checkpoint-interval", "100ms", "--state-dir", t.TempDir(), "-v")
	r.waitCompleted(t, 3)
	outage(c)
	select {
	case <-r.done:
		t.Fatalf("the demo ended before the server was back, so the outage did not hit it; raise --events. stderr (end):\n%s", tail(r.stderr(), 3000))
	default:
	}
	res := r.wait()
	wantExit(t, res, 0)
	if !restartedRE.MatchString(res.stderr) {
		t.Errorf("the run summary shows no restart; the outage went unnoticed. stderr (end):\n%s", tail(res.stderr, 3000))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lines, err := readPostgresLines(ctx, endpoint{scheme: "postgres", conn: c.Conn, table: table})
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(n, k), lines); d != "" {
		t.Fatalf("table %s is not exactly one row per event with the failure-free values: %s", table, d)
	}
	if left := c.Prepared(t); len(left) > 0 {
		t.Fatalf("prepared transactions left on the server: %v", left)
	}
	t.Logf("%d rows exact, nothing prepared; %s", n, summaryRE.FindString(res.stderr))
}

var (
	restartedRE = regexp.MustCompile(`restarts [1-9]`)
	summaryRE   = regexp.MustCompile(`ran [^\n]*`)
)
