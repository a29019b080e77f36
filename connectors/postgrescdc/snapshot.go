package postgrescdc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// maxSnapshotRetries bounds how often a chunk retakes its snapshot while
// a transaction that committed before the slot's start point still shows
// as in progress (see takeSnapshot).
const maxSnapshotRetries = 500

// pendingChunk is a chunk read but not yet wholly emitted: Read hands
// out at most the task's batch size per call, and a chunk may be larger.
type pendingChunk struct {
	table int
	rows  []Change
	keys  [][]keyVal // rows' primary keys
	state chunkState // its snapshot and insert position
	short bool       // fewer rows than asked: the table ends with it
}

// readChunk reads the next chunk of table t, at most n rows, in a
// REPEATABLE READ transaction of its own.
func (s *source) readChunk(ctx context.Context, i int, n int) (*pendingChunk, error) {
	t, p := s.tables[i], &s.st.Tables[i]
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: begin: %w", t.qualified(), err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	snap, insertLSN, err := s.takeSnapshot(ctx, tx)
	if err != nil {
		return nil, err
	}
	var lower []keyVal
	if len(p.Chunks) > 0 {
		lower = p.Chunks[len(p.Chunks)-1].Upper
	}
	sql, args := chunkQuery(t, lower, n)
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: read chunk %d: %w", t.qualified(), len(p.Chunks), err)
	}
	fds := rows.FieldDescriptions()
	cols := make([]Column, len(fds))
	keyIdx := make([]int, len(t.keys))
	for i, fd := range fds {
		cols[i] = Column{Name: fd.Name, TypeOID: fd.DataTypeOID, TypeMod: fd.TypeModifier, Key: slices.Contains(t.keys, fd.Name)}
		if j := slices.Index(t.keys, fd.Name); j >= 0 {
			keyIdx[j] = i
		}
	}
	now := time.Now()
	pc := &pendingChunk{table: i, state: chunkState{Snap: snap, InsertLSN: insertLSN}}
	kv := make([]any, len(keyIdx))
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("snapshot of %s: decode row: %w", t.qualified(), err)
		}
		row := make(Row, len(cols))
		for i, c := range cols {
			row[c.Name] = vals[i]
		}
		for j, i := range keyIdx {
			kv[j] = vals[i]
		}
		k, err := keyOf(t.kinds, kv)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("snapshot of %s: %w", t.qualified(), err)
		}
		pc.rows = append(pc.rows, Change{Op: OpRead, Schema: t.schema, Table: t.name, Columns: cols, After: row, CommitTime: now})
		pc.keys = append(pc.keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("snapshot of %s: read chunk %d: %w", t.qualified(), len(p.Chunks), err)
	}
	// After the rows (one query at a time on a connection); the rows
	// share cols.
	if err := fillMissing(ctx, tx, t, cols); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("snapshot of %s: commit: %w", t.qualified(), err)
	}
	pc.short = len(pc.rows) < n
	s.metrics.chunk(len(pc.rows))
	if s.cfg.afterChunk != nil {
		if err := s.cfg.afterChunk(t.qualified(), len(p.Chunks)); err != nil {
			return nil, err
		}
	}
	return pc, nil
}

// emitPending hands out up to max rows of the pending chunk and records
// what it handed out as a chunk of the state: the keys above the last
// recorded chunk up to the last row emitted (or to +∞ once a short chunk
// is drained), seen in the pending chunk's snapshot. That is a chunk in
// its own right, so a checkpoint may fall between two calls: a restore
// reads the rest anew, in a snapshot of its own. Consecutive pieces of
// one read extend one recorded chunk.
func (s *source) emitPending(dst []Change, max int) []Change {
	pc := s.pend
	p := &s.st.Tables[pc.table]
	k := min(max-len(dst), len(pc.rows))
	dst = append(dst, pc.rows[:k]...)
	var upper []keyVal
	if k > 0 {
		upper = pc.keys[k-1]
	}
	clear(pc.rows[:k])
	pc.rows, pc.keys = pc.rows[k:], pc.keys[k:]
	finished := len(pc.rows) == 0 && pc.short
	if finished {
		upper = nil
	}
	if k == 0 && !finished {
		return dst
	}
	if n := len(p.Chunks); n > 0 && p.Chunks[n-1].InsertLSN == pc.state.InsertLSN && p.Chunks[n-1].Snap.Xmax == pc.state.Snap.Xmax && pc.state.Rows > 0 {
		p.Chunks[n-1].Upper = upper
		p.Chunks[n-1].Rows += int64(k)
	} else {
		c := pc.state
		c.Upper, c.Rows = upper, int64(k)
		p.Chunks = append(p.Chunks, c)
	}
	pc.state.Rows += int64(k)
	if finished {
		p.Finished = true
	}
	if len(pc.rows) == 0 {
		s.pend = nil
	}
	return dst
}

// takeSnapshot fixes the transaction's snapshot with its first statement
// and returns it and the WAL insert position after it. It retakes the
// snapshot (in a new subtransaction-free way: the caller's transaction
// has run no other statement yet, so it rolls back and retries) while a
// transaction that the slot's exported snapshot saw as committed shows as
// still in progress: PostgreSQL writes a commit record before it removes
// the transaction from the proc array, and a logical slot counts the
// record, so for a moment the two disagree. Without the retry the chunk
// could miss a transaction that the log does not replay either.
func (s *source) takeSnapshot(ctx context.Context, tx pgx.Tx) (pgSnapshot, uint64, error) {
	return takeSnapshot(ctx, tx, s.st.Exported)
}

// takeSnapshot is source.takeSnapshot for a chunk reader that is not the
// source (a parallel snapshot reader, reader.go): exported is the slot's
// exported snapshot.
func takeSnapshot(ctx context.Context, tx pgx.Tx, exported pgSnapshot) (pgSnapshot, uint64, error) {
	var text, lsn string
	if err := tx.QueryRow(ctx, "SELECT pg_current_snapshot()::text, pg_current_wal_insert_lsn()::text").Scan(&text, &lsn); err != nil {
		return pgSnapshot{}, 0, fmt.Errorf("read snapshot: %w", err)
	}
	snap, err := parseSnapshot(text)
	if err != nil {
		return pgSnapshot{}, 0, err
	}
	if x, bad := seesLess(exported, snap); bad {
		return pgSnapshot{}, 0, &retrySnapshot{xid: x}
	}
	l, err := parseLSN(lsn)
	return snap, l, err
}

// retrySnapshot asks readChunk's caller to read the chunk again.
type retrySnapshot struct{ xid uint64 }

func (r *retrySnapshot) Error() string {
	return fmt.Sprintf("transaction %d committed before the slot's start point but is in progress in the chunk's snapshot", r.xid)
}

// seesLess reports a transaction the exported snapshot e saw committed
// and snap sees in progress.
func seesLess(e, snap pgSnapshot) (uint64, bool) {
	for _, x := range snap.Xip {
		if x < e.Xmax {
			if _, inE := slices.BinarySearch(e.Xip, x); !inE {
				return x, true
			}
		}
	}
	return 0, false
}

// chunkQuery selects the next n rows of t above lower in key order. Text
// key columns sort in byte order, the order compareKeys uses: with
// COLLATE "C" unless their collation is C or POSIX already (then the
// primary key index serves the query).
func chunkQuery(t tableInfo, lower []keyVal, n int) (string, []any) {
	keys, params := keyExprs(t, 1)
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT * FROM %s", t.ident())
	var args []any
	if lower != nil {
		fmt.Fprintf(&b, " WHERE (%s) > (%s)", strings.Join(keys, ", "), strings.Join(params, ", "))
		args = keyArgs(t.kinds, lower)
	}
	fmt.Fprintf(&b, " ORDER BY %s LIMIT %d", strings.Join(keys, ", "), n)
	return b.String(), args
}

// keyExprs returns t's key columns as chunk queries compare them and
// parameters for a key's values numbered from $first.
func keyExprs(t tableInfo, first int) (keys, params []string) {
	keys = make([]string, len(t.keys))
	params = make([]string, len(t.keys))
	for i, k := range t.keys {
		keys[i] = pgx.Identifier{k}.Sanitize()
		switch t.kinds[i] {
		case kindText:
			if i >= len(t.byteOrder) || !t.byteOrder[i] {
				keys[i] += ` COLLATE "C"`
			}
			params[i] = fmt.Sprintf("$%d::text", first+i)
		case kindInt:
			params[i] = fmt.Sprintf("$%d::bigint", first+i)
		default:
			// uuid and the time types: the column's own type (format_type
			// names, e.g. "timestamp(3) with time zone"), so that the
			// comparison is the index's.
			params[i] = fmt.Sprintf("$%d::%s", first+i, t.types[i])
		}
	}
	return keys, params
}

// chunkOf returns the chunk of p whose key range holds k, or nil when
// the table's snapshot has not read it.
func chunkOf(t tableInfo, p *tableProgress, k []keyVal) *chunkState {
	i, _ := slices.BinarySearchFunc(p.Chunks, k, func(c chunkState, k []keyVal) int {
		if c.Upper == nil {
			return 1 // the last chunk reaches +∞
		}
		return compareKeys(t.kinds, c.Upper, k)
	})
	if i == len(p.Chunks) {
		return nil
	}
	return &p.Chunks[i]
}
