package postgrescdc

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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
// sets up (wal_level = logical, prepared transactions). WEIR_TEST_POSTGRES
// overrides it.
func testConnString() string {
	if s := os.Getenv("WEIR_TEST_POSTGRES"); s != "" {
		return s
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

var server struct {
	once sync.Once
	err  error
}

func needServer(t testing.TB) {
	t.Helper()
	server.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, testConnString())
		if err != nil {
			server.err = err
			return
		}
		conn.Close(ctx)
	})
	if server.err != nil {
		t.Skipf("PostgreSQL not reachable at %s (%v): run .ci/postgres.sh as root to start it", testConnString(), server.err)
	}
}

// dbSeq makes database and slot names unique within a run; the pid
// makes them unique across concurrent runs.
var dbSeq atomic.Int64

// newDB creates a throwaway database and returns its connection string
// and a name unique to it (for slots, which are per server). The
// database and its slots are dropped at the end unless the test failed.
func newDB(t testing.TB) (string, string) {
	t.Helper()
	needServer(t)
	name := fmt.Sprintf("cdc_%d_%d", os.Getpid(), dbSeq.Add(1))
	admin := connect(t, testConnString())
	exec(t, admin, "CREATE DATABASE "+name)
	u, err := url.Parse(testConnString())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	dsn := u.String()
	t.Cleanup(func() {
		// Prepared transactions left anywhere on the server block every
		// later slot creation: never leave one.
		if c, err := pgx.Connect(context.Background(), dsn); err == nil {
			rows, err := c.Query(context.Background(), "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()")
			if err == nil {
				gids, _ := pgx.CollectRows(rows, pgx.RowTo[string])
				for _, g := range gids {
					c.Exec(context.Background(), "ROLLBACK PREPARED "+quoteLiteral(g))
				}
			}
			c.Close(context.Background())
		}
		if t.Failed() {
			t.Logf("left database %s and its slots for inspection", name)
			return
		}
		ctx := context.Background()
		c, err := pgx.Connect(ctx, testConnString())
		if err != nil {
			return
		}
		defer c.Close(ctx)
		// A slot whose reader just disconnected stays active until its
		// walsender exits; a database with a slot cannot be dropped.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			c.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1 AND NOT active", name)
			var left int
			if c.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE database = $1", name).Scan(&left) != nil || left == 0 {
				break
			}
		}
		c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return u.String(), name
}

// connect opens a connection closed at the end of the test.
func connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func exec(t testing.TB, db *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// tableText returns a table's rows as sorted text lines of the given
// columns, for comparisons across databases.
func tableText(t testing.TB, db *pgx.Conn, table string, cols []string, key string) []string {
	t.Helper()
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = "coalesce(" + pgx.Identifier{c}.Sanitize() + "::text, 'NULL')"
	}
	rows, err := db.Query(context.Background(), "SELECT concat_ws('|', "+strings.Join(q, ", ")+") FROM "+pgx.Identifier{table}.Sanitize()+" ORDER BY "+key)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffLines reports the first differences between two sorted listings.
func diffLines(want, got []string) string {
	var b strings.Builder
	w, g := map[string]bool{}, map[string]bool{}
	for _, l := range want {
		w[l] = true
	}
	for _, l := range got {
		g[l] = true
	}
	n := 0
	for _, l := range want {
		if !g[l] && n < 10 {
			fmt.Fprintf(&b, "  missing in replica: %s\n", l)
			n++
		}
	}
	for _, l := range got {
		if !w[l] && n < 20 {
			fmt.Fprintf(&b, "  extra in replica:   %s\n", l)
			n++
		}
	}
	fmt.Fprintf(&b, "  (%d rows in source, %d in replica)", len(want), len(got))
	return b.String()
}
