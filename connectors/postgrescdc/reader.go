package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
)

// readerStateName is a snapshot reader's keyed state: per planned range
// (the key), the snapshot it was read in.
const readerStateName = "postgres-cdc-range"

// rangeRead is a range a reader read: in snapshot Snap, after which the
// WAL insert position was InsertLSN (as chunkState). Passed: a log
// change of the range committed at or after InsertLSN arrived, so no
// later one is seen by Snap and Snap is dropped.
type rangeRead struct {
	Snap      pgSnapshot
	InsertLSN uint64
	Rows      int64
	Passed    bool
}

// reader reads the planned ranges of a parallel snapshot and judges the
// log changes of its ranges (parallel.go).
type reader struct {
	connString string
	names      []string
	cfg        config
	read       *rangesRead // shared with the planner (parallel.go)

	// ctx is Open's: the task's, cancelled when the task is. A keyed
	// function gets no context per record, and reading a range is a
	// query.
	ctx     context.Context
	log     *slog.Logger
	conn    *pgx.Conn
	tables  []tableInfo
	state   weir.ValueState[rangeRead]
	metrics *metrics
}

// Open registers the range state and connects.
func (r *reader) Open(ctx context.Context, kc *weir.KeyedContext[uint64]) error {
	r.ctx = ctx
	r.log = r.cfg.logger
	if r.log == nil {
		r.log = kc.Logger()
	}
	st, err := weir.GetValueState[rangeRead](kc, readerStateName)
	if err != nil {
		return err
	}
	r.state = st
	r.metrics = newMetrics(r.cfg.reg, &kc.RuntimeContext, r.cfg.slot)
	r.conn, err = pgx.Connect(ctx, r.connString)
	if err != nil {
		return fmt.Errorf("postgres cdc snapshot reader %q: connect: %w", kc.UID(), err)
	}
	r.tables, err = loadTables(ctx, r.conn, r.names)
	if err != nil {
		err = fmt.Errorf("postgres cdc snapshot reader %q: %w", kc.UID(), err)
		if errors.Is(err, ErrSetup) {
			return weir.Unrecoverable(err)
		}
		return err
	}
	return nil
}

// ProcessElement reads a range on its assignment, and emits a log
// change of a range unless the range's snapshot saw its transaction.
func (r *reader) ProcessElement(v routed, kc *weir.KeyedContext[uint64], out *weir.Collector[Change]) error {
	if v.Direct {
		out.Collect(v.Change)
		return nil
	}
	if a := v.Assign; a != nil {
		if _, ok := r.state.Value(); ok {
			// A consistent checkpoint holds a range either assigned and
			// read or neither; this is a bug, and re-reading would emit
			// the range twice.
			return fmt.Errorf("postgres cdc: range %d of table %d assigned twice", a.Range, a.Table)
		}
		st, err := r.readRange(a, out)
		if err != nil {
			return err
		}
		r.state.Update(st)
		return nil
	}
	c := v.Change
	st, ok := r.state.Value()
	if !ok {
		return fmt.Errorf("postgres cdc: a log change of %s.%s (range %d of table %d) reached a reader before its range was read", c.Schema, c.Table, uint32(v.Chunk), v.Chunk>>32)
	}
	switch {
	case st.Passed:
	case uint64(c.LSN) >= st.InsertLSN:
		// Its commit record is at or after the insert position read
		// after the range's snapshot, so the snapshot does not see it,
		// nor any transaction of the range the log brings later.
		r.state.Update(rangeRead{InsertLSN: st.InsertLSN, Rows: st.Rows, Passed: true})
	case st.Snap.visible(c.Xid):
		// The range's row already holds this change.
		if r.cfg.onSuppress != nil {
			r.cfg.onSuppress()
		}
		return nil
	}
	out.Collect(c)
	return nil
}

// readRange reads a planned range in a REPEATABLE READ transaction of
// its own, retaking the snapshot while it sees less than the slot's
// exported snapshot (takeSnapshot), and collects its rows into out. The
// rows leave the reader only after ProcessElement returned (a keyed
// function's output is emitted after its input batch), so after an
// error nothing collected leaves: the task fails, and a retry collects
// nothing before its snapshot is good.
func (r *reader) readRange(a *assignment, out *weir.Collector[Change]) (rangeRead, error) {
	for try := 0; ; try++ {
		st, err := r.readRangeOnce(a, out)
		var retry *retrySnapshot
		if errors.As(err, &retry) && try < maxSnapshotRetries {
			if err := sleep(r.ctx, 10*time.Millisecond); err != nil {
				return rangeRead{}, err
			}
			continue
		}
		return st, err
	}
}

func (r *reader) readRangeOnce(a *assignment, out *weir.Collector[Change]) (rangeRead, error) {
	ctx := r.ctx
	if a.Table >= len(r.tables) {
		return rangeRead{}, fmt.Errorf("postgres cdc: range of table %d, the reader captures %d", a.Table, len(r.tables))
	}
	t := r.tables[a.Table]
	tx, err := r.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return rangeRead{}, fmt.Errorf("snapshot of %s: begin: %w", t.qualified(), err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	snap, insertLSN, err := takeSnapshot(ctx, tx, a.Exported)
	if err != nil {
		return rangeRead{}, err
	}
	sql, args := rangeQuery(t, a.Lower, a.Upper)
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return rangeRead{}, fmt.Errorf("snapshot of %s: read range %d: %w", t.qualified(), a.Range, err)
	}
	fds := rows.FieldDescriptions()
	cols := make([]Column, len(fds))
	for i, fd := range fds {
		cols[i] = Column{Name: fd.Name, TypeOID: fd.DataTypeOID, TypeMod: fd.TypeModifier, Key: slices.Contains(t.keys, fd.Name)}
	}
	now := time.Now()
	n := 0
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return rangeRead{}, fmt.Errorf("snapshot of %s: decode row: %w", t.qualified(), err)
		}
		row := make(Row, len(cols))
		for i, c := range cols {
			row[c.Name] = vals[i]
		}
		// The rows share cols, which fillMissing completes below,
		// before any row leaves.
		out.Collect(Change{Op: OpRead, Schema: t.schema, Table: t.name, Columns: cols, After: row, CommitTime: now})
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return rangeRead{}, fmt.Errorf("snapshot of %s: read range %d: %w", t.qualified(), a.Range, err)
	}
	if err := fillMissing(ctx, tx, t, cols); err != nil {
		return rangeRead{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return rangeRead{}, fmt.Errorf("snapshot of %s: commit: %w", t.qualified(), err)
	}
	r.metrics.chunk(n)
	if r.cfg.afterChunk != nil {
		if err := r.cfg.afterChunk(t.qualified(), a.Range); err != nil {
			return rangeRead{}, err
		}
	}
	r.read.n.Add(1)
	return rangeRead{Snap: snap, InsertLSN: insertLSN, Rows: int64(n)}, nil
}

// Close closes the reader's connection (weir.Closer).
func (r *reader) Close(ctx context.Context) error {
	if r.conn != nil {
		r.conn.Close(context.WithoutCancel(ctx))
		r.conn = nil
	}
	return nil
}
