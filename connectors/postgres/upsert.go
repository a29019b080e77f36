package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
)

// maxParams is the most bind parameters one statement may have (the wire
// protocol counts them in 16 bits).
const maxParams = 65535

// Upsert returns a factory of PostgreSQL sinks for weir.SinkTo that keep
// one row per key: rows (row appends v's values to dst, one per column, in
// order) are written with INSERT … ON CONFLICT (keyColumns) DO UPDATE, in
// batches of WithBatchRows distinct keys and at every checkpoint, each
// batch in one transaction. keyColumns must be among columns and must have
// a unique index or constraint on the table. A replay after a restore
// writes the same keys again with the values of the same records, so once
// the job has caught up the table is what a run without failures leaves:
// the last row of every key. (Between a restore and that point a key may
// briefly show an older value.)
func Upsert[T any](connString, table string, columns, keyColumns []string, row func(v T, dst []any) []any, opts ...Option) func() weir.Sink[T] {
	cfg := newConfig(opts)
	cols := append([]string(nil), columns...)
	keys := append([]string(nil), keyColumns...)
	return func() weir.Sink[T] { return newUpsert(connString, table, cols, keys, row, cfg) }
}

// upsertSink buffers at most one row per key between flushes: a newer row
// of a buffered key overwrites it in place. That bounds the buffer by the
// number of keys, and it is required, since one INSERT … ON CONFLICT DO
// UPDATE statement may not touch the same row twice.
type upsertSink[T any] struct {
	*plainSink[T]
	keys    []string
	keyIdx  []int
	index   map[string]int // encoded key -> row in buf
	keyBuf  []byte
	fullSQL string // the statement for a chunk of chunkRows rows
	chunk   int    // rows per statement
}

func newUpsert[T any](connString, table string, cols, keys []string, row func(T, []any) []any, cfg config) *upsertSink[T] {
	u := &upsertSink[T]{
		plainSink: &plainSink[T]{connString: connString, table: table, columns: cols, row: row, cfg: cfg},
		keys:      keys,
		index:     map[string]int{},
	}
	u.flush = u.send
	return u
}

func (u *upsertSink[T]) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	if err := u.checkKeys(); err != nil {
		return weir.Unrecoverable(fmt.Errorf("postgres sink %s/%d: %w", rc.UID(), rc.Subtask(), err))
	}
	return u.plainSink.Open(ctx, rc)
}

func (u *upsertSink[T]) checkKeys() error {
	if len(u.keys) == 0 {
		return fmt.Errorf("no key columns; name the columns of the unique key to upsert on")
	}
	u.keyIdx = u.keyIdx[:0]
	for _, k := range u.keys {
		i := slices.Index(u.columns, k)
		if i < 0 {
			return fmt.Errorf("key column %q is not among the columns %q", k, u.columns)
		}
		u.keyIdx = append(u.keyIdx, i)
	}
	u.chunk = max(min(u.cfg.batchRows, maxParams/max(len(u.columns), 1)), 1)
	return nil
}

// Write buffers each record's row, replacing the buffered row of its key.
func (u *upsertSink[T]) Write(ctx context.Context, batch []T) error {
	for _, v := range batch {
		if err := add(&u.buf, u.row, v); err != nil {
			return fmt.Errorf("%s: table %s: %w", u.name, u.table, err)
		}
		last := u.buf.rows() - 1
		r := u.buf.row(last)
		u.keyBuf = u.keyBuf[:0]
		for _, i := range u.keyIdx {
			// Type and value: int64(1) and "1" are different keys.
			u.keyBuf = fmt.Appendf(u.keyBuf, "%T=%v\x00", r[i], r[i])
		}
		if at, ok := u.index[string(u.keyBuf)]; ok {
			copy(u.buf.row(at), r)
			clear(r)
			u.buf.vals = u.buf.vals[:last*u.buf.ncols]
			continue
		}
		u.index[string(u.keyBuf)] = last
		if u.buf.rows() >= u.cfg.batchRows {
			if err := u.Flush(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// send writes the buffer in one transaction, in statements of up to chunk
// rows.
func (u *upsertSink[T]) send(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, u.conn, func(tx pgx.Tx) error {
		for start := 0; start < u.buf.rows(); start += u.chunk {
			n := min(u.chunk, u.buf.rows()-start)
			sql := u.fullSQL
			if n != u.chunk || sql == "" {
				sql = u.statement(n)
				if n == u.chunk {
					u.fullSQL = sql
				}
			}
			if _, err := tx.Exec(ctx, sql, u.buf.vals[start*u.buf.ncols:(start+n)*u.buf.ncols]...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	clear(u.index)
	return nil
}

// statement builds INSERT … VALUES (…), … ON CONFLICT (keys) DO UPDATE SET
// for n rows (DO NOTHING when every column is a key column).
func (u *upsertSink[T]) statement(n int) string {
	var b strings.Builder
	cols := quoteIdents(u.columns)
	b.WriteString("INSERT INTO " + u.target.Sanitize() + " (" + strings.Join(cols, ", ") + ") VALUES ")
	p := 1
	for r := range n {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range cols {
			if c > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(p))
			p++
		}
		b.WriteByte(')')
	}
	b.WriteString(" ON CONFLICT (" + strings.Join(quoteIdents(u.keys), ", ") + ") ")
	var set []string
	for i, c := range cols {
		if !slices.Contains(u.keyIdx, i) {
			set = append(set, c+" = EXCLUDED."+c)
		}
	}
	if len(set) == 0 {
		b.WriteString("DO NOTHING")
	} else {
		b.WriteString("DO UPDATE SET " + strings.Join(set, ", "))
	}
	return b.String()
}
