package postgrescdc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// applyBatch is how many staged changes one apply transaction takes.
const applyBatch = 2000

// apply applies the committed staged changes of this sink to the replica
// tables in staging order (the changelog's order) and deletes them, in
// transactions that do both: each staged change is applied exactly once,
// whenever a crash falls. Uncommitted (prepared) staged rows are not
// visible, so they wait for their commit.
func (r *replica) apply(ctx context.Context) error {
	for {
		n, err := r.applyOnce(ctx)
		if err != nil {
			return err
		}
		if n < applyBatch {
			return nil
		}
	}
}

func (r *replica) applyOnce(ctx context.Context) (int, error) {
	tx, err := r.control.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("postgres replica sink: apply: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, "SELECT id, change FROM "+stagingTable+" WHERE sink = $1 ORDER BY id LIMIT $2", r.prefix, applyBatch)
	if err != nil {
		return 0, fmt.Errorf("postgres replica sink: read staged changes: %w", err)
	}
	var ids []int64
	var changes []stagedChange
	for rows.Next() {
		var id int64
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			rows.Close()
			return 0, fmt.Errorf("postgres replica sink: read staged changes: %w", err)
		}
		var sc stagedChange
		if err := json.Unmarshal(raw, &sc); err != nil {
			rows.Close()
			return 0, fmt.Errorf("postgres replica sink: staged change %d: %w", id, err)
		}
		ids = append(ids, id)
		changes = append(changes, sc)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("postgres replica sink: read staged changes: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	b := &pgx.Batch{}
	for i := range changes {
		c := &changes[i]
		if b.Len() > 0 && r.changesSchema(c) {
			// The changes queued so far go first: a column added with
			// the source's default for older rows must find them there
			// (and drops its default before later changes run).
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return 0, fmt.Errorf("postgres replica sink: apply %d changes: %w", b.Len(), err)
			}
			b = &pgx.Batch{}
		}
		t, err := r.ensureTable(ctx, tx, c)
		if err != nil {
			return 0, err
		}
		sql, args := applySQL(c, t.keys)
		b.Queue(sql, args...)
		if r.o.journal != "" {
			row := c.After
			if c.Op == string(rune(OpDelete)) {
				row = c.Before
			}
			b.Queue("INSERT INTO "+pgx.Identifier{r.o.journal}.Sanitize()+" (op, tbl, lsn, key, row) VALUES ($1, $2, $3, $4, $5)",
				c.Op, c.Table, c.LSN, keyText(c, row), rowText(row))
		}
	}
	b.Queue("DELETE FROM "+stagingTable+" WHERE sink = $1 AND id <= $2", r.prefix, ids[len(ids)-1])
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("postgres replica sink: apply %d changes: %w", len(ids), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("postgres replica sink: apply: commit: %w", err)
	}
	return len(ids), nil
}

// changesSchema reports whether applying c first creates its replica
// table or adds a column to it.
func (r *replica) changesSchema(c *stagedChange) bool {
	t := r.tables[c.Table]
	if t == nil {
		return true
	}
	for _, col := range c.Cols {
		if !t.cols[col.Name] {
			return true
		}
	}
	return false
}

// applySQL is the statement that applies one change: values go in as
// text and are cast to the column's type.
func applySQL(c *stagedChange, keys []string) (string, []any) {
	ident := pgx.Identifier{c.Table}.Sanitize()
	typeOf := map[string]string{}
	for _, col := range c.Cols {
		typeOf[col.Name] = col.Type
	}
	if c.Op == string(rune(OpDelete)) {
		conds := make([]string, len(keys))
		args := make([]any, len(keys))
		for i, k := range keys {
			conds[i] = fmt.Sprintf("%s = CAST($%d::text AS %s)", pgx.Identifier{k}.Sanitize(), i+1, typeOf[k])
			args[i] = c.Before[k]
		}
		return "DELETE FROM " + ident + " WHERE " + strings.Join(conds, " AND "), args
	}
	var cols, params, sets []string
	var args []any
	for _, col := range c.Cols {
		v, ok := c.After[col.Name]
		if !ok {
			continue // TOASTed and unchanged: keep the replica's value
		}
		q := pgx.Identifier{col.Name}.Sanitize()
		cols = append(cols, q)
		args = append(args, v)
		params = append(params, fmt.Sprintf("CAST($%d::text AS %s)", len(args), col.Type))
		if !slices.Contains(keys, col.Name) {
			sets = append(sets, q+" = EXCLUDED."+q)
		}
	}
	qk := make([]string, len(keys))
	for i, k := range keys {
		qk[i] = pgx.Identifier{k}.Sanitize()
	}
	sql := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO ", ident, strings.Join(cols, ", "), strings.Join(params, ", "), strings.Join(qk, ", "))
	if len(sets) == 0 {
		return sql + "NOTHING", args
	}
	return sql + "UPDATE SET " + strings.Join(sets, ", "), args
}

// ensureTable creates the change's replica table, or adds the columns it
// lacks (a column added at the source), inside the apply transaction. A
// column dropped at the source stays in the replica.
func (r *replica) ensureTable(ctx context.Context, tx pgx.Tx, c *stagedChange) (*replicaTable, error) {
	t := r.tables[c.Table]
	ident := pgx.Identifier{c.Table}.Sanitize()
	if t == nil {
		var defs, keys []string
		for _, col := range c.Cols {
			defs = append(defs, pgx.Identifier{col.Name}.Sanitize()+" "+col.Type)
			if col.Key {
				keys = append(keys, pgx.Identifier{col.Name}.Sanitize())
			}
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("postgres replica sink: table %s: change without primary key columns", c.Table)
		}
		sql := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s))", ident, strings.Join(defs, ", "), strings.Join(keys, ", "))
		if _, err := tx.Exec(ctx, sql); err != nil {
			return nil, fmt.Errorf("postgres replica sink: create table %s: %w", c.Table, err)
		}
		t = &replicaTable{cols: map[string]bool{}}
		rows, err := tx.Query(ctx, `SELECT a.attname, coalesce(a.attnum = ANY(i.indkey), false) FROM pg_attribute a
			LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
			WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, ident)
		if err != nil {
			return nil, fmt.Errorf("postgres replica sink: table %s: columns: %w", c.Table, err)
		}
		for rows.Next() {
			var col string
			var key bool
			if err := rows.Scan(&col, &key); err != nil {
				rows.Close()
				return nil, fmt.Errorf("postgres replica sink: table %s: columns: %w", c.Table, err)
			}
			t.cols[col] = true
			if key {
				t.keys = append(t.keys, col)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("postgres replica sink: table %s: columns: %w", c.Table, err)
		}
		if len(t.keys) == 0 {
			return nil, fmt.Errorf("postgres replica sink: replica table %s has no primary key: add the source's (ALTER TABLE %s ADD PRIMARY KEY (…))", c.Table, ident)
		}
		// The transaction may still roll back: remember the table only
		// once it commits would be exact; remembering it now is safe
		// because CREATE … IF NOT EXISTS and ADD COLUMN IF NOT EXISTS
		// run again harmlessly after a failure (the sink restarts).
		r.tables[c.Table] = t
	}
	for _, col := range c.Cols {
		if t.cols[col.Name] {
			continue
		}
		name := pgx.Identifier{col.Name}.Sanitize()
		sql := fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s", ident, name, col.Type)
		if col.Missing != nil {
			// The source's older rows read this value for the column
			// (it was added with a DEFAULT): the replica's older rows
			// get it the same way, and the default goes again, since
			// every later change carries the column's value.
			sql += fmt.Sprintf(" DEFAULT %s::%s", quoteLiteral(*col.Missing), col.Type)
		}
		if _, err := tx.Exec(ctx, sql); err != nil {
			return nil, fmt.Errorf("postgres replica sink: table %s: add column %q: %w", c.Table, col.Name, err)
		}
		if col.Missing != nil {
			if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT", ident, name)); err != nil {
				return nil, fmt.Errorf("postgres replica sink: table %s: column %q: drop the default: %w", c.Table, col.Name, err)
			}
		}
		older := "NULL"
		if col.Missing != nil {
			older = *col.Missing
		}
		r.log.Info("postgres replica sink: added a column the source added", "table", c.Table, "column", col.Name, "type", col.Type, "older_rows", older)
		t.cols[col.Name] = true
	}
	return t, nil
}

// keyText prints a change's key values (journal).
func keyText(c *stagedChange, row map[string]*string) string {
	var parts []string
	for _, col := range c.Cols {
		if col.Key {
			if v := row[col.Name]; v != nil {
				parts = append(parts, *v)
			} else {
				parts = append(parts, "NULL")
			}
		}
	}
	return strings.Join(parts, ",")
}

// rowText prints a row with sorted columns (journal).
func rowText(row map[string]*string) string {
	keys := make([]string, 0, len(row))
	for k := range row {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		v := "NULL"
		if row[k] != nil {
			v = *row[k]
		}
		fmt.Fprintf(&b, "%s=%s;", k, v)
	}
	return b.String()
}
