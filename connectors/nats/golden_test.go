package nats

import (
	"flag"
	"testing"

	"github.com/weirstream/weir/internal/testutil"
)

var writeGolden = flag.Bool("write-golden", false, "write the golden files of the persisted formats from the current encoding (a new format only)")

// TestGoldenTxn: a transaction handle as this version stores it in
// checkpoints (testdata/txn-v1.golden) is still read by this build: a
// restore must publish a checkpoint's messages written by an older weir.
func TestGoldenTxn(t *testing.T) {
	want := &Txn{
		ID: "demo/nats/1/5f3a-7",
		Msgs: []Record{
			{Subject: "DEMOOUT.lines", Header: map[string][]string{"Weir-Key": {"k1"}}, Data: []byte("line one")},
			{Subject: "DEMOOUT.lines", Data: []byte{}},
		},
		Bytes: 37,
		Count: 2,
	}
	testutil.CodecGolden(t, "testdata/txn-v1.golden", want, *writeGolden)
}
