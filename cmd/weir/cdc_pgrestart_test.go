package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/internal/testutil/pgtest"
)

// TestCDCPostgresRestart: the captured PostgreSQL itself crashes
// (pg_ctlcluster stop -m immediate: no shutdown checkpoint, the WAL is
// replayed on start) and comes back, several times, while a writer
// changes the source tables and weir run cdc copies them into a replica
// database on the same server; between the crashes weir is SIGKILLed too.
// weir is never told: its replication connection, its snapshot reads and
// its replica transactions break, the job restarts by its restart
// strategy until the server answers, and resumes from its last completed
// checkpoint. At the end --verify must find the replica equal to the
// source row for row, and no prepared transaction may be left.
//
// The server is a throwaway cluster of the test's own (pgtest):
// crashing the shared CI server would fail every other package using it.
func TestCDCPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("creates and crashes a PostgreSQL cluster of its own")
	}
	pg := pgtest.NewCluster(t, "wal_level=logical")
	src, dst := pgDatabase(t, pg, "cdc_src"), pgDatabase(t, pg, "cdc_dst")
	for _, sql := range []string{
		"CREATE TABLE accounts (id bigint PRIMARY KEY, balance int, note text)",
		"INSERT INTO accounts SELECT i, i % 1000, 'n' || i FROM generate_series(1, 40000) i",
		"CREATE TABLE notes (tag text PRIMARY KEY, n int)",
		"INSERT INTO notes SELECT 'tag' || i, 0 FROM generate_series(1, 300) i",
	} {
		pgExec(t, pg, "cdc_src", sql)
	}
	args := []string{"run", "cdc", "--source", src, "--tables", "accounts,notes", "--sink", dst, "--slot", "cdc_restart",
		"--chunk-rows", "1000", "--idle-timeout", "10s", "--checkpoint-interval", "100ms",
		"-D", "restart-strategy.exponential-delay.max-backoff=1s",
		"--state-dir", t.TempDir(), "-v"}

	// The writer goes on through the crashes: a broken connection ends
	// one cdcWriter, and the next connects once the server is back.
	wctx, stopWriter := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wrote := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for seed := uint64(21); wctx.Err() == nil; seed++ {
			n, _ := cdcWriter(wctx, src, seed)
			wrote += n
			time.Sleep(50 * time.Millisecond)
		}
	}()

	rng := killRand(t, 9)
	r := startWeir(t, 5*time.Minute, args...)
	// A run killed before its first checkpoint leaves a slot no
	// checkpoint knows, which the next start refuses (TestCDCKillRestart).
	r.waitCompleted(t, 1)
	const crashes = 3
	for i := range crashes {
		time.Sleep(300*time.Millisecond + time.Duration(rng.Int64N(int64(time.Second))))
		failed := strings.Count(r.stderr(), `msg="task failed"`)
		pg.Ctl(t, "stop", "-m", "immediate")
		time.Sleep(time.Duration(rng.Int64N(int64(time.Second))))
		pg.Ctl(t, "start")
		// weir noticed (its replication connection broke) and recovers
		// by itself: a checkpoint completes after the server is back.
		at, before := time.Now(), lastCompleted(r.stderr())
		if !waitCompletedAfter(r, before, 90*time.Second) {
			t.Fatalf("crash %d: no checkpoint completed within 90 s after PostgreSQL came back (last: %d); stderr:\n%s", i, before, tail(r.stderr(), 4000))
		}
		if strings.Count(r.stderr(), `msg="task failed"`) == failed {
			t.Fatalf("crash %d: no task failed although the server crashed under the job; stderr:\n%s", i, tail(r.stderr(), 4000))
		}
		t.Logf("crash %d: a checkpoint completed %s after PostgreSQL came back", i, time.Since(at).Round(time.Millisecond))
		if i == 1 {
			// And weir itself dies once, to restart from its own
			// checkpoints against a server that crashed under it.
			r.kill()
			t.Logf("weir SIGKILLed after crash %d", i)
			r = startWeir(t, 5*time.Minute, args...)
			r.waitCompleted(t, 1)
		}
	}
	stopWriter()
	wg.Wait()
	t.Logf("the writer committed %d transactions across %d server crashes", wrote, crashes)
	r.kill()
	res := runWeir(t, 3*time.Minute, append(args, "--verify")...)
	wantExit(t, res, 0)
	var rows int64
	conn := pgConnect(t, pg, "cdc_src")
	if err := conn.QueryRow(t.Context(), "SELECT (SELECT count(*) FROM accounts) + (SELECT count(*) FROM notes)").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	wantLine(t, res.stdout, fmt.Sprintf("verify: replica equals source exactly (%d rows in 2 tables)", rows))
	if left := pg.Prepared(t); len(left) > 0 {
		t.Errorf("prepared transactions left on the server: %v", left)
	}
}

// lastCompleted is the highest checkpoint id a -v run's stderr reports
// completed; 0 if none.
func lastCompleted(stderr string) int {
	last := 0
	for _, m := range completedRE.FindAllStringSubmatch(stderr, -1) {
		if id, _ := strconv.Atoi(m[1]); id > last {
			last = id
		}
	}
	return last
}

// waitCompletedAfter waits until r reports a checkpoint completed with an
// id above after.
func waitCompletedAfter(r *running, after int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if lastCompleted(r.stderr()) > after {
			return true
		}
		select {
		case <-r.done:
			return lastCompleted(r.stderr()) > after
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// pgDatabase creates database name on the cluster and returns its URL.
func pgDatabase(t *testing.T, c *pgtest.Cluster, name string) string {
	t.Helper()
	pgExec(t, c, "postgres", "CREATE DATABASE "+name)
	return pgURL(c, name)
}

// pgURL is the URL of database db of the cluster.
func pgURL(c *pgtest.Cluster, db string) string {
	return strings.Replace(c.Conn, "/postgres?", "/"+db+"?", 1)
}

// pgConnect opens a connection to database db of the cluster, closed when
// the test ends.
func pgConnect(t *testing.T, c *pgtest.Cluster, db string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgURL(c, db))
	if err != nil {
		t.Fatalf("connect to %s on cluster %s: %v", db, c.Name, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// pgExec runs sql in database db of the cluster.
func pgExec(t *testing.T, c *pgtest.Cluster, db, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgURL(c, db))
	if err != nil {
		t.Fatalf("connect to %s on cluster %s: %v", db, c.Name, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
