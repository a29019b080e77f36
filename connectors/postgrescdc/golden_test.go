package postgrescdc

import (
	"flag"
	"testing"

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
