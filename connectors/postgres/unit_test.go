package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/runtime"
)

// TestMaxPreparedTransactionsMessage: with prepared transactions disabled
// the exactly-once sink fails for good, saying how to enable them.
func TestMaxPreparedTransactionsMessage(t *testing.T) {
	err := checkPreparedTransactions("0", "db.example:5432/app")
	if err == nil {
		t.Fatal("max_prepared_transactions = 0 accepted")
	}
	if !runtime.IsUnrecoverable(err) {
		t.Errorf("error %q is not unrecoverable; a restart cannot change the setting", err)
	}
	for _, want := range []string{"db.example:5432/app", "max_prepared_transactions = 0", "ALTER SYSTEM SET max_prepared_transactions = 64", "restart the server", "postgres.Upsert"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := checkPreparedTransactions("64", "x"); err != nil {
		t.Errorf("max_prepared_transactions = 64: %v", err)
	}
	if err := checkPreparedTransactions("lots", "x"); err == nil || runtime.IsUnrecoverable(err) {
		t.Errorf("unparsable setting: %v, want a plain error", err)
	}
}

// TestUnreachableServer: the error names host:port and how to check it,
// and is not unrecoverable (the server may come back). Port 1 refuses at
// once; no server is needed.
func TestUnreachableServer(t *testing.T) {
	conn := "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5"
	s := ExactlyOnce(conn, "t", []string{"id"}, func(v int64, dst []any) []any { return append(dst, v) })().(*exactlyOnce[int64])
	err := s.open(context.Background(), "pg", 0, 1, nil, nil)
	if err == nil {
		t.Fatal("open against a closed port succeeded")
	}
	for _, want := range []string{"127.0.0.1:1", "pg_isready -h 127.0.0.1 -p 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if runtime.IsUnrecoverable(err) {
		t.Errorf("unreachable server marked unrecoverable: %v", err)
	}
	u := newAtLeastOnce(conn, "t", []string{"id"}, func(v int64, dst []any) []any { return append(dst, v) }, defaultConfig())
	if err := u.open(context.Background(), "pg", 0); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("at-least-once open against a closed port: %v", err)
	}
	bad := ExactlyOnce("postgres://x:y@host:notaport/db", "t", []string{"id"}, func(v int64, dst []any) []any { return append(dst, v) })().(*exactlyOnce[int64])
	if err := bad.open(context.Background(), "pg", 0, 1, nil, nil); !runtime.IsUnrecoverable(err) {
		t.Errorf("bad connection string: %v, want an unrecoverable error", err)
	}
}

// TestBadArguments: mistakes in the sink's arguments fail Open for good,
// naming the mistake.
func TestBadArguments(t *testing.T) {
	row := func(v int64, dst []any) []any { return append(dst, v) }
	cases := []struct {
		name, uid, table string
		cols             []string
		opts             []Option
		want             string
	}{
		{"no columns", "pg", "t", nil, nil, "no columns"},
		{"duplicate column", "pg", "t", []string{"a", "a"}, nil, `column "a" listed twice`},
		{"uid with colon", "a:b", "t", []string{"a"}, nil, `operator uid "a:b" contains ':'`},
		{"prefix with quote", "pg", "t", []string{"a"}, []Option{WithTransactionPrefix("x'")}, `transaction prefix "x'" contains '\''`},
		{"long uid", strings.Repeat("u", 190), "t", []string{"a"}, nil, "shorten them"},
		{"bad table", "pg", "a.b.c", []string{"a"}, nil, `table "a.b.c": want table or schema.table`},
	}
	for _, c := range cases {
		s := ExactlyOnce("postgres://127.0.0.1:1/x", c.table, c.cols, row, c.opts...)().(*exactlyOnce[int64])
		err := s.open(context.Background(), c.uid, 0, 1, nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !runtime.IsUnrecoverable(err) {
			t.Errorf("%s: open = %v, want an unrecoverable error saying %q", c.name, err, c.want)
		}
	}
}

func TestParseGID(t *testing.T) {
	sink := sinkID("weir", "pg")
	if g := gidOf(sink, 3, 17); g != "weir:pg:3:17" {
		t.Fatalf("gidOf = %q", g)
	}
	cases := []struct {
		gid     string
		subtask int
		seq     uint64
		ok      bool
	}{
		{"weir:pg:3:17", 3, 17, true},
		{"weir:pg:0:0", 0, 0, true},
		{"weir:pg2:0:0", 0, 0, false},
		{"weir:pg:0", 0, 0, false},
		{"weir:pg:0:1:2", 0, 0, false},
		{"weir:pg:-1:2", 0, 0, false},
		{"weir:pg:01:2", 0, 0, false},
		{"weir:pg:1:+2", 0, 0, false},
		{"other:pg:1:2", 0, 0, false},
	}
	for _, c := range cases {
		sub, seq, ok := parseGID(sink, c.gid)
		if sub != c.subtask || seq != c.seq || ok != c.ok {
			t.Errorf("parseGID(%q) = %d, %d, %v; want %d, %d, %v", c.gid, sub, seq, ok, c.subtask, c.seq, c.ok)
		}
	}
}

func TestUpsertStatement(t *testing.T) {
	u := newUpsert("", "s.t", []string{"i", "account", "count"}, []string{"account"}, func(v int64, dst []any) []any { return dst }, defaultConfig())
	if err := u.checkKeys(); err != nil {
		t.Fatal(err)
	}
	u.target, _ = tableName("s.t")
	want := `INSERT INTO "s"."t" ("i", "account", "count") VALUES ($1, $2, $3), ($4, $5, $6) ON CONFLICT ("account") DO UPDATE SET "i" = EXCLUDED."i", "count" = EXCLUDED."count"`
	if got := u.statement(2); got != want {
		t.Errorf("statement(2) =\n%s\nwant\n%s", got, want)
	}
	u.keys = []string{"nope"}
	if err := u.checkKeys(); err == nil || !strings.Contains(err.Error(), `key column "nope" is not among the columns`) {
		t.Errorf("unknown key column: %v", err)
	}
}

// TestRetryableState: which server errors leave a COMMIT/ROLLBACK
// PREPARED's outcome to be resolved, and which answer it for good.
func TestRetryableState(t *testing.T) {
	for state, want := range map[string]bool{
		"57P01": true,  // admin_shutdown: the server is restarting
		"57P02": true,  // crash_shutdown
		"57P03": true,  // cannot_connect_now: starting up
		"08006": true,  // connection_failure
		"53300": true,  // too_many_connections
		"58030": true,  // io_error
		"55000": true,  // prepared transaction … is busy
		"42501": false, // permission denied to finish prepared transaction
		"0A000": false, // prepared transaction belongs to another database
		"42704": false, // not prepared: answered, the marker decides
	} {
		if got := retryableState(state); got != want {
			t.Errorf("retryableState(%s) = %v, want %v", state, got, want)
		}
	}
}
