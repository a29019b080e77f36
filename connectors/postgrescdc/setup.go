package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrSetup is wrapped by the errors of the setup checks: the server or
// the tables are not ready for change data capture. Each error names the
// thing and the fix; retrying does not help.
var ErrSetup = errors.New("postgres cdc setup")

func setupErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSetup, fmt.Sprintf(format, args...))
}

// tableInfo is what the source knows of a captured table from the
// catalog: its qualified name and primary key.
type tableInfo struct {
	schema, name string
	keys         []string  // primary key columns, in key order
	kinds        []keyKind // how they compare
	types        []string  // their types (format_type), for the chunk queries' parameters
	// byteOrder: the column's collation is C or POSIX, so its index
	// sorts text in byte order and chunk queries need no COLLATE "C".
	byteOrder []bool
}

func (t tableInfo) qualified() string { return t.schema + "." + t.name }
func (t tableInfo) ident() string     { return pgx.Identifier{t.schema, t.name}.Sanitize() }

// splitTable splits "schema.table" or "table" (schema public).
func splitTable(s string) (schema, name string) {
	if a, b, ok := strings.Cut(s, "."); ok {
		return a, b
	}
	return "public", s
}

// checkServer checks wal_level and the user's replication privilege.
func checkServer(ctx context.Context, conn *pgx.Conn) error {
	var level string
	if err := conn.QueryRow(ctx, "SHOW wal_level").Scan(&level); err != nil {
		return fmt.Errorf("read wal_level: %w", err)
	}
	if level != "logical" {
		return setupErr("wal_level is %q, change data capture needs logical: set wal_level = logical in postgresql.conf (ALTER SYSTEM SET wal_level = logical) and restart the server", level)
	}
	var user string
	var repl, super bool
	if err := conn.QueryRow(ctx, "SELECT rolname, rolreplication, rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&user, &repl, &super); err != nil {
		return fmt.Errorf("read the role's privileges: %w", err)
	}
	if !repl && !super {
		return setupErr("role %q lacks the REPLICATION privilege a logical replication connection needs: ALTER ROLE %s WITH REPLICATION", user, pgx.Identifier{user}.Sanitize())
	}
	return nil
}

// loadTables reads the captured tables' primary keys and checks that
// updates and deletes can be captured: a table without primary key needs
// REPLICA IDENTITY FULL (and then still has no key to chunk by, so it is
// refused for the snapshot too).
func loadTables(ctx context.Context, conn *pgx.Conn, names []string) ([]tableInfo, error) {
	if len(names) == 0 {
		return nil, setupErr("no tables to capture: name at least one table")
	}
	out := make([]tableInfo, 0, len(names))
	for _, n := range names {
		t := tableInfo{}
		t.schema, t.name = splitTable(n)
		var ident string
		err := conn.QueryRow(ctx, `SELECT c.relreplident::text FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
			WHERE s.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`, t.schema, t.name).Scan(&ident)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, setupErr("table %s does not exist in database %s: create it or fix the table list", t.qualified(), conn.Config().Database)
		}
		if err != nil {
			return nil, fmt.Errorf("table %s: read replica identity: %w", t.qualified(), err)
		}
		rows, err := conn.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod),
				coalesce(c.collname, '') IN ('C', 'POSIX') OR (c.collname = 'default' AND
					(SELECT datcollate FROM pg_database WHERE datname = current_database()) IN ('C', 'POSIX'))
			FROM pg_index i JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
			LEFT JOIN pg_collation c ON c.oid = a.attcollation
			WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY k.ord`, t.ident())
		if err != nil {
			return nil, fmt.Errorf("table %s: read primary key: %w", t.qualified(), err)
		}
		for rows.Next() {
			var col, typ string
			var byteOrder bool
			if err := rows.Scan(&col, &typ, &byteOrder); err != nil {
				rows.Close()
				return nil, fmt.Errorf("table %s: read primary key: %w", t.qualified(), err)
			}
			kind, err := keyKindOf(t.qualified(), col, typ)
			if err != nil {
				rows.Close()
				return nil, setupErr("%v", err)
			}
			t.keys = append(t.keys, col)
			t.kinds = append(t.kinds, kind)
			t.types = append(t.types, typ)
			t.byteOrder = append(t.byteOrder, byteOrder)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("table %s: read primary key: %w", t.qualified(), err)
		}
		if len(t.keys) == 0 {
			if ident == "d" || ident == "n" {
				return nil, setupErr("table %s has no primary key and REPLICA IDENTITY %s, so PostgreSQL cannot log which row an UPDATE or DELETE changed: add a primary key (ALTER TABLE %s ADD PRIMARY KEY (…))", t.qualified(), identName(ident), t.ident())
			}
			return nil, setupErr("table %s has no primary key: the snapshot reads tables in primary key ranges and the replica applies changes by key; add a primary key (ALTER TABLE %s ADD PRIMARY KEY (…))", t.qualified(), t.ident())
		}
		if ident == "n" {
			return nil, setupErr("table %s has REPLICA IDENTITY NOTHING, so PostgreSQL logs no key for UPDATE and DELETE: ALTER TABLE %s REPLICA IDENTITY DEFAULT", t.qualified(), t.ident())
		}
		out = append(out, t)
	}
	return out, nil
}

func identName(c string) string {
	switch c {
	case "d":
		return "DEFAULT"
	case "n":
		return "NOTHING"
	case "f":
		return "FULL"
	case "i":
		return "USING INDEX"
	}
	return c
}

// ensurePublication checks that the publication exists and publishes the
// tables, creating it when asked to.
func ensurePublication(ctx context.Context, conn *pgx.Conn, pub string, tables []tableInfo, create bool) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", pub).Scan(&exists); err != nil {
		return fmt.Errorf("publication %q: %w", pub, err)
	}
	if !exists {
		idents := make([]string, len(tables))
		for i, t := range tables {
			idents[i] = t.ident()
		}
		sql := fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE %s WITH (publish = 'insert, update, delete')", pgx.Identifier{pub}.Sanitize(), strings.Join(idents, ", "))
		if !create {
			return setupErr("publication %q does not exist: create it (%s) or let the source create it (WithCreatePublication, weir run cdc does)", pub, sql)
		}
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("create publication %q: %w", pub, err)
		}
	}
	for _, t := range tables {
		var in bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3)", pub, t.schema, t.name).Scan(&in); err != nil {
			return fmt.Errorf("publication %q: %w", pub, err)
		}
		if !in {
			return setupErr("publication %q does not publish table %s: ALTER PUBLICATION %s ADD TABLE %s", pub, t.qualified(), pgx.Identifier{pub}.Sanitize(), t.ident())
		}
	}
	return nil
}

// slotInfo is the replication slot as pg_replication_slots shows it.
type slotInfo struct {
	exists    bool
	active    bool
	pid       int32
	plugin    string
	confirmed uint64
}

func readSlot(ctx context.Context, conn *pgx.Conn, slot string) (slotInfo, error) {
	var s slotInfo
	var pid *int32
	var plugin *string
	var confirmed *string
	err := conn.QueryRow(ctx, `SELECT active, active_pid, plugin, confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1 AND database = current_database()`, slot).Scan(&s.active, &pid, &plugin, &confirmed)
	if errors.Is(err, pgx.ErrNoRows) {
		var other string
		if err := conn.QueryRow(ctx, `SELECT coalesce(database, '(physical)') FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&other); err == nil {
			return s, setupErr("replication slot %q belongs to database %s, not %s: name another slot (--slot, WithSlot)", slot, other, conn.Config().Database)
		}
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("replication slot %q: %w", slot, err)
	}
	s.exists = true
	if pid != nil {
		s.pid = *pid
	}
	if plugin != nil {
		s.plugin = *plugin
	}
	if confirmed != nil {
		l, err := parseLSN(*confirmed)
		if err != nil {
			return s, fmt.Errorf("replication slot %q: %w", slot, err)
		}
		s.confirmed = l
	}
	if s.active {
		return s, setupErr("replication slot %q is in use by server process %d (another job or client reads it): stop that reader, or give this job its own slot (--slot, WithSlot)", slot, s.pid)
	}
	if s.plugin != "pgoutput" {
		return s, setupErr("replication slot %q uses output plugin %q, not pgoutput: name another slot (--slot, WithSlot)", slot, s.plugin)
	}
	return s, nil
}

// slotReleaseWait is how long a restore waits for the slot to become
// free: after a crash of the process that read it, the server notices
// the dead connection only after a moment, and until then shows the slot
// active.
const slotReleaseWait = 20 * time.Second

// readSlotFree is readSlot waiting up to slotReleaseWait for an active
// slot to be released.
func readSlotFree(ctx context.Context, conn *pgx.Conn, slot string) (slotInfo, error) {
	deadline := time.Now().Add(slotReleaseWait)
	for {
		s, err := readSlot(ctx, conn, slot)
		if err == nil || !s.active || time.Now().After(deadline) {
			return s, err
		}
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return s, ctx.Err()
		case <-t.C:
		}
	}
}

// querier is a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// fillMissing sets, on the columns of t in cols, the value rows that
// existed before a column was added read for it (attmissingval: a column
// added with a constant DEFAULT fills them without a change in the log),
// so that a replica adding the column can fill its own existing rows.
// attmissingval stays until the table is rewritten (VACUUM FULL, a
// volatile default), after which those rows hold the value themselves.
func fillMissing(ctx context.Context, q querier, t tableInfo, cols []Column) error {
	rows, err := q.Query(ctx, `SELECT attname, (attmissingval::text::text[])[1] FROM pg_attribute
		WHERE attrelid = $1::regclass AND atthasmissing AND attnum > 0 AND NOT attisdropped`, t.ident())
	if err != nil {
		return fmt.Errorf("table %s: read the values of columns added with a default: %w", t.qualified(), err)
	}
	missing := map[string]*string{}
	for rows.Next() {
		var name string
		var v *string
		if err := rows.Scan(&name, &v); err != nil {
			rows.Close()
			return fmt.Errorf("table %s: read the values of columns added with a default: %w", t.qualified(), err)
		}
		missing[name] = v
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("table %s: read the values of columns added with a default: %w", t.qualified(), err)
	}
	for i := range cols {
		v := missing[cols[i].Name]
		cols[i].HasMissing = v != nil
		if v != nil {
			cols[i].Missing = *v
		}
	}
	return nil
}
