package postgrescdc

import (
	"flag"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/weirstream/weir/internal/testutil"
)

var writeGolden = flag.Bool("write-golden", false, "write the golden files of the persisted formats from the current encoding (a new format only)")

// TestGoldenPosition: the source's position as this version stores it in
// checkpoints (testdata/position-v1.golden: mid-snapshot, one table done
// in two chunks, one with a chunk read, a transaction partly emitted) is
// still read by this build: a restore resumes a capture an older weir
// checkpointed.
func TestGoldenPosition(t *testing.T) {
	snap := pgSnapshot{Xmin: 7410, Xmax: 7415, Xip: []uint64{7411, 7413}}
	want := savedState{
		Slot:     "weir_cdc",
		StartLSN: 0x16B3748,
		Exported: snap,
		Tables: []tableProgress{
			{Table: "public.accounts", Finished: true, Chunks: []chunkState{
				{Upper: []keyVal{{I: 8192}}, Snap: snap, InsertLSN: 0x16B3800, Rows: 8192},
				{Snap: pgSnapshot{Xmin: 7420, Xmax: 7420}, InsertLSN: 0x16C0000, Rows: 311},
			}},
			{Table: "public.orders", Chunks: []chunkState{
				{Upper: []keyVal{{S: "ord-0042"}, {I: 3}}, Snap: snap, InsertLSN: 0x16C1000, Rows: 4096},
			}},
		},
		Done:       0x16B3748,
		PartialLSN: 0x16C2000,
		PartialN:   17,
	}
	testutil.CodecGolden(t, "testdata/position-v1.golden", want, *writeGolden)
}

// TestGoldenParallelPosition: the planner's position in a parallel
// snapshot (testdata/position-v2-planned.golden: two tables planned in
// ranges, some assigned) and a reader's keyed state per range
// (testdata/range-v1.golden) as this version stores them.
func TestGoldenParallelPosition(t *testing.T) {
	snap := pgSnapshot{Xmin: 7410, Xmax: 7415, Xip: []uint64{7411, 7413}}
	want := savedState{
		Slot:     "weir_cdc",
		StartLSN: 0x16B3748,
		Exported: snap,
		Tables: []tableProgress{
			{Table: "public.accounts", Finished: true, Bounds: [][]keyVal{{{I: 8192}}, {{I: 16384}}}, Assigned: 3},
			{Table: "public.orders", Bounds: [][]keyVal{{{S: "ord-0042"}, {I: 3}}}, Assigned: 1},
		},
		Done:    0x16B3748,
		Planned: true,
	}
	testutil.CodecGolden(t, "testdata/position-v2-planned.golden", want, *writeGolden)
	testutil.CodecGolden(t, "testdata/range-v1.golden", rangeRead{Snap: snap, InsertLSN: 0x16C1000, Rows: 8192}, *writeGolden)
	testutil.CodecGolden(t, "testdata/range-v1-passed.golden", rangeRead{InsertLSN: 0x16C1000, Rows: 8192, Passed: true}, *writeGolden)
}

// TestGoldenChange: a Change as weir stores it in channel state
// (unaligned checkpoints) and sends it between processes
// (testdata/change-v1.golden: Change.MarshalBinary, version 1).
func TestGoldenChange(t *testing.T) {
	cols := []Column{
		{Name: "id", TypeOID: pgtype.Int8OID, Key: true},
		{Name: "note", TypeOID: pgtype.TextOID},
		{Name: "at", TypeOID: pgtype.TimestamptzOID, Missing: "2026-01-01 00:00:00+00", HasMissing: true},
		{Name: "ok", TypeOID: pgtype.BoolOID},
		{Name: "gone", TypeOID: pgtype.TextOID},
	}
	at := time.Date(2026, 12, 6, 10, 11, 12, 123456000, time.UTC)
	want := Change{
		Op: OpUpdate, Schema: "public", Table: "orders", Columns: cols,
		Before: Row{"id": int64(41)},
		After:  Row{"id": int64(42), "note": "ä note", "at": at.In(time.Local), "ok": true, "gone": nil}, // pgx decodes timestamptz in time.Local
		LSN:    0x16B3748, Xid: 7411, CommitTime: at, TxFirst: true,
	}
	testutil.CodecGolden(t, "testdata/change-v1.golden", want, *writeGolden)
}
