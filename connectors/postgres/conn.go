package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/weirstream/weir"
)

// connect opens one connection. A connection string that does not parse is
// unrecoverable (no restart fixes it); an unreachable server is not (it may
// come back), and its error names host:port and how to check it.
func connect(ctx context.Context, cfg config, connString string) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(connString)
	if err != nil {
		// pgx does not echo the string (it may hold a password).
		return nil, weir.Unrecoverable(fmt.Errorf("parse connection string: %w; use a URL (postgres://user@host:5432/db) or key=value pairs (host=… port=… dbname=…)", err))
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = cfg.connectTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		addr := net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
		return nil, fmt.Errorf("connect to PostgreSQL at %s (database %q, user %q): %w; check that the server runs and accepts connections there (pg_isready -h %s -p %d) and that the connection string is right",
			addr, cc.Database, cc.User, err, cc.Host, cc.Port)
	}
	return conn, nil
}

// op returns the context for one statement or round trip: the task's ctx
// (cancelled when the task is), bounded by the configured timeout
// (WithTimeout), so that a hung server fails the task rather than stalls
// it until the runtime's stuck-task watchdog.
func (c config) op(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}

// tableName splits "schema.table" or "table" into an identifier; quoting
// happens in Sanitize, so names are never spliced into SQL raw.
func tableName(s string) (pgx.Identifier, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("table %q: want table or schema.table", s)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("table %q: empty name part", s)
		}
	}
	return pgx.Identifier(parts), nil
}

// quoteIdents quotes each column name.
func quoteIdents(cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = pgx.Identifier{c}.Sanitize()
	}
	return out
}

// checkColumns validates the column list shared by all sinks.
func checkColumns(cols []string) error {
	if len(cols) == 0 {
		return fmt.Errorf("no columns; name the columns the row function fills")
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if c == "" {
			return fmt.Errorf("empty column name in %q", cols)
		}
		if seen[c] {
			return fmt.Errorf("column %q listed twice", c)
		}
		seen[c] = true
	}
	return nil
}

// quoteLiteral makes s a SQL string literal. Transaction ids only hold
// checked characters, but PREPARE TRANSACTION takes no parameters, so the
// literal is built here and built safely.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// sqlState returns the SQLSTATE of a server error, or "".
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// undefinedObject is the SQLSTATE of COMMIT/ROLLBACK PREPARED for an id
// that is not prepared.
const undefinedObject = "42704"

// createTable creates the table (columnDefs) if absent.
func createTable(ctx context.Context, conn *pgx.Conn, cfg config, table pgx.Identifier, columnDefs string) error {
	name := table.Sanitize()
	return createIfAbsent(ctx, conn, cfg, name, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "CREATE TABLE "+name+" ("+columnDefs+")"); err != nil {
			return fmt.Errorf("create table %s (%s): %w; fix the column definitions given to WithCreateTable", name, columnDefs, err)
		}
		return nil
	})
}

// createIfAbsent runs create in a transaction unless the table name
// exists. The check comes first and takes no lock on the table, because
// DDL on an existing table can wait for a lock that a prepared transaction
// holds until the very commit the caller is about to make (CREATE INDEX IF
// NOT EXISTS does, and waits forever). Subtasks open at the same time, so
// creation is serialized with a transaction-scoped advisory lock on the
// name.
func createIfAbsent(ctx context.Context, conn *pgx.Conn, cfg config, name string, create func(context.Context, pgx.Tx) error) error {
	ctx, cancel := cfg.op(ctx)
	defer cancel()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists); err != nil {
		return fmt.Errorf("look up table %s: %w", name, err)
	}
	if exists {
		return nil
	}
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "weir create table "+name); err != nil {
			return fmt.Errorf("lock for creating table %s: %w", name, err)
		}
		return create(ctx, tx)
	})
	// The lock is not a relation lock, so taking it does not refresh this
	// session's catalog view: a second subtask that waited for the first
	// still misses the table in to_regclass, and learns of it from CREATE
	// TABLE failing with duplicate_table.
	if sqlState(err) == duplicateTable {
		return nil
	}
	return err
}

// duplicateTable is the SQLSTATE of CREATE TABLE for an existing name.
const duplicateTable = "42P07"
