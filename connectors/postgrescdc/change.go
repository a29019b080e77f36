package postgrescdc

import (
	"time"

	"github.com/jackc/pglogrepl"
)

// Op is a change's operation, Debezium's letters.
type Op byte

// The operations of a Change.
const (
	OpRead   Op = 'r' // a row of the initial snapshot
	OpInsert Op = 'c'
	OpUpdate Op = 'u'
	OpDelete Op = 'd'
)

func (o Op) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpInsert:
		return "insert"
	case OpUpdate:
		return "update"
	case OpDelete:
		return "delete"
	}
	return "op(" + string(rune(o)) + ")"
}

// Row is one row, column name to value. Values are what pgx decodes the
// column's type to (int32 for integer, string for text, time.Time for
// timestamptz, pgtype.Numeric for numeric, …); nil is SQL NULL. An
// update's After omits the columns whose value PostgreSQL did not send
// because it was TOASTed and unchanged: the row keeps its old value there.
type Row map[string]any

// Column describes one column of a captured table as the change saw it.
type Column struct {
	Name    string
	TypeOID uint32
	TypeMod int32
	Key     bool // part of the primary key
	// Missing is the value, in PostgreSQL's text format, that rows which
	// existed before the column was added read for it (a column added
	// with a constant DEFAULT fills them without a change in the log:
	// PostgreSQL's attmissingval), when HasMissing; else they read NULL.
	// A replica adding the column fills its existing rows with it.
	Missing    string
	HasMissing bool
}

// Change is one record of the changelog.
//
// Snapshot rows are OpRead with After set. Inserts have After; updates
// have After and Before (the old row if the table's REPLICA IDENTITY is
// FULL, else only the old key columns when the key changed, else nil);
// an update that changes the primary key is emitted as a delete of the
// old key and an insert of the new one, as Debezium does. Deletes have
// Before (the key columns, or the whole row under REPLICA IDENTITY FULL).
type Change struct {
	Op     Op
	Schema string
	Table  string
	// Columns are the table's columns at the change (a schema change
	// shows up here first).
	Columns []Column
	Before  Row
	After   Row
	// LSN is the commit LSN of the change's transaction (0 for snapshot
	// rows); Xid its transaction id.
	LSN pglogrepl.LSN
	Xid uint32
	// CommitTime is the transaction's commit time, the event time
	// (snapshot rows: the time the chunk was read).
	CommitTime time.Time
	// TxFirst and TxLast mark the first and last change of a
	// transaction (both set for a one-change transaction; neither for
	// snapshot rows).
	TxFirst, TxLast bool
}

// Timestamp is the change's event time in milliseconds, for a
// weir.WatermarkStrategy's timestamp assigner.
func (c Change) Timestamp() int64 { return c.CommitTime.UnixMilli() }

// Key returns the primary key columns' values of the row the change is
// about, in key order.
func (c Change) Key() []any {
	r := c.After
	if c.Op == OpDelete {
		r = c.Before
	}
	var k []any
	for _, col := range c.Columns {
		if col.Key {
			k = append(k, r[col.Name])
		}
	}
	return k
}
