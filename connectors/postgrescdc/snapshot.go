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

// readChunk reads the next chunk of table t, at most n rows, in a
// REPEATABLE READ transaction of its own, appends its rows to dst as
// OpRead changes and records the chunk in p. A chunk is emitted within
// one Read, so a checkpoint never falls inside one.
func (s *source) readChunk(ctx context.Context, t tableInfo, p *tableProgress, n int, dst []Change) ([]Change, error) {
	base := len(dst)
	out, err := s.readChunkRows(ctx, t, p, n, dst)
	if err != nil {
		return dst[:base], err // the chunk is not recorded: none of it
	}
	return out, nil
}

func (s *source) readChunkRows(ctx context.Context, t tableInfo, p *tableProgress, n int, dst []Change) ([]Change, error) {
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return dst, fmt.Errorf("snapshot of %s: begin: %w", t.qualified(), err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	snap, insertLSN, err := s.takeSnapshot(ctx, tx)
	if err != nil {
		return dst, fmt.Errorf("snapshot of %s: %w", t.qualified(), err)
	}
	var lower []keyVal
	if len(p.Chunks) > 0 {
		lower = p.Chunks[len(p.Chunks)-1].Upper
	}
	sql, args := chunkQuery(t, lower, n)
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return dst, fmt.Errorf("snapshot of %s: read chunk %d: %w", t.qualified(), len(p.Chunks), err)
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
	var last []any
	count := 0
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return dst, fmt.Errorf("snapshot of %s: decode row: %w", t.qualified(), err)
		}
		row := make(Row, len(cols))
		for i, c := range cols {
			row[c.Name] = vals[i]
		}
		last = last[:0]
		for _, i := range keyIdx {
			last = append(last, vals[i])
		}
		dst = append(dst, Change{Op: OpRead, Schema: t.schema, Table: t.name, Columns: cols, After: row, CommitTime: now})
		count++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return dst, fmt.Errorf("snapshot of %s: read chunk %d: %w", t.qualified(), len(p.Chunks), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return dst, fmt.Errorf("snapshot of %s: commit: %w", t.qualified(), err)
	}
	c := chunkState{Snap: snap, InsertLSN: insertLSN, Rows: int64(count)}
	if count == n {
		if c.Upper, err = keyOf(t.kinds, last); err != nil {
			return dst, fmt.Errorf("snapshot of %s: %w", t.qualified(), err)
		}
	} else {
		p.Finished = true // this chunk reaches +∞
	}
	p.Chunks = append(p.Chunks, c)
	s.metrics.chunk(count)
	if s.cfg.afterChunk != nil {
		if err := s.cfg.afterChunk(t.qualified(), len(p.Chunks)-1); err != nil {
			p.Chunks, p.Finished = p.Chunks[:len(p.Chunks)-1], false
			return dst, err
		}
	}
	return dst, nil
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
	var text, lsn string
	if err := tx.QueryRow(ctx, "SELECT pg_current_snapshot()::text, pg_current_wal_insert_lsn()::text").Scan(&text, &lsn); err != nil {
		return pgSnapshot{}, 0, fmt.Errorf("read snapshot: %w", err)
	}
	snap, err := parseSnapshot(text)
	if err != nil {
		return pgSnapshot{}, 0, err
	}
	if x, bad := s.seesLess(snap); bad {
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

// seesLess reports a transaction the exported snapshot saw committed and
// snap sees in progress.
func (s *source) seesLess(snap pgSnapshot) (uint64, bool) {
	e := s.st.Exported
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
// key columns sort with COLLATE "C" (byte order), the order compareKeys
// uses.
func chunkQuery(t tableInfo, lower []keyVal, n int) (string, []any) {
	keys := make([]string, len(t.keys))
	params := make([]string, len(t.keys))
	for i, k := range t.keys {
		keys[i] = pgx.Identifier{k}.Sanitize()
		if t.kinds[i] == kindText {
			keys[i] += ` COLLATE "C"`
			params[i] = fmt.Sprintf("$%d::text", i+1)
		} else {
			params[i] = fmt.Sprintf("$%d::bigint", i+1)
		}
	}
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
