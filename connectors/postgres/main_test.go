package postgres

import (
	"context"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

// TestMain checks that every connection and job these tests start has
// stopped by the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testConnString is the server the tests use: the one .ci/postgres.sh
// sets up. WEIR_TEST_POSTGRES overrides it.
func testConnString() string {
	if s := os.Getenv("WEIR_TEST_POSTGRES"); s != "" {
		return s
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

var server struct {
	once     sync.Once
	err      error
	prepared bool
}

// needServer skips the test when the test server is unreachable, and,
// with prepared, when it does not allow prepared transactions.
func needServer(t testing.TB, prepared bool) {
	t.Helper()
	server.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, testConnString())
		if err != nil {
			server.err = err
			return
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT current_setting('max_prepared_transactions')::int").Scan(&n); err != nil {
			server.err = err
			return
		}
		server.prepared = n > 0
	})
	if server.err != nil {
		t.Skipf("PostgreSQL not reachable at %s (%v): run .ci/postgres.sh as root to start it", testConnString(), server.err)
	}
	if prepared && !server.prepared {
		t.Skipf("PostgreSQL at %s has max_prepared_transactions = 0: run .ci/postgres.sh as root to enable prepared transactions", testConnString())
	}
}

// testDB returns a connection to the test server, closed at the end.
func testDB(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// exec runs sql or fails the test.
func exec(t testing.TB, db *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// resetSink removes what an earlier run of a test left under the
// transaction prefix: prepared transactions (first: they lock the table),
// marker rows and the table.
func resetSink(t testing.TB, db *pgx.Conn, prefix, table string) {
	t.Helper()
	for _, gid := range prepared(t, db, prefix) {
		exec(t, db, "ROLLBACK PREPARED "+quoteLiteral(gid))
	}
	deleteMarkers(t, db, prefix)
	exec(t, db, "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize())
	// A failed test leaves its table and markers for inspection; the next
	// run starts by removing them.
	t.Cleanup(func() {
		if t.Failed() || t.Skipped() {
			return
		}
		exec(t, db, "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize())
		deleteMarkers(t, db, prefix)
	})
}

// deleteMarkers deletes the marker rows under prefix, if there is a
// marker table.
func deleteMarkers(t testing.TB, db *pgx.Conn, prefix string) {
	t.Helper()
	var markers bool
	if err := db.QueryRow(context.Background(), "SELECT to_regclass('weir_sink_commits') IS NOT NULL").Scan(&markers); err != nil {
		t.Fatal(err)
	}
	if markers {
		exec(t, db, "DELETE FROM weir_sink_commits WHERE starts_with(sink, $1)", prefix+":")
	}
}

// prepared lists the prepared transactions under prefix, sorted.
func prepared(t testing.TB, db *pgx.Conn, prefix string) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), "SELECT gid FROM pg_prepared_xacts WHERE starts_with(gid, $1)", prefix+":")
	if err != nil {
		t.Fatal(err)
	}
	gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(gids)
	return gids
}

// queryInts returns the single bigint column of sql's rows, sorted.
func queryInts(t testing.TB, db *pgx.Conn, sql string, args ...any) []int64 {
	t.Helper()
	rows, err := db.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
