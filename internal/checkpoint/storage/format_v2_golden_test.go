package storage

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"reflect"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

var rewriteV2 = flag.Bool("rewrite-v2-golden", false, "write testdata/metadata-v2.golden from today's encoder (only when introducing it; never to make a failing test pass)")

// sampleV2Full is a version-2 metadata with everything version 2 added:
// channel state on one subtask, an incremental (LSM) keyed handle with its
// shared and private files, catalogue and timers on another, and weak-mode
// positions with a log file.
func sampleV2Full() *checkpoint.Metadata {
	md := withChannels(sampleMetadata("job", 7,
		checkpoint.StateFile{Path: "chk-7/1-0-keyed", Size: 10, CRC32C: 0xdeadbeef},
		checkpoint.StateFile{Path: "chk-7/1-1-keyed", Size: 12, CRC32C: 0x01020304}))
	sub := &md.Operators[1].Subtasks[1].State
	sub.Keyed = nil
	sub.Incremental = &checkpoint.IncrementalKeyedStateHandle{
		KeyGroupStart: 64, KeyGroupEnd: 128, StoreID: "3f2a9c1e",
		Shared: []checkpoint.SharedFileRef{
			{Name: "3f2a9c1e-000012.sst", Size: 4096, CRC32C: 0xa1b2c3d4, Local: "000012.sst"},
			{Name: "3f2a9c1e-000015.sst", Size: 2048, CRC32C: 0x0badcafe, Local: "000015.sst"},
		},
		Private: []checkpoint.PrivateStoreFile{
			{Local: "MANIFEST-000016", File: checkpoint.StateFile{Path: "chk-7/agg-1-MANIFEST-000016", Size: 300, CRC32C: 0x11111111}},
		},
		States:       []checkpoint.StoreState{{Name: "count", Kind: 0, ID: 1}, {Name: "seen", Kind: 2, ID: 2}},
		Timers:       &checkpoint.KeyedStateHandle{File: checkpoint.StateFile{Path: "chk-7/agg-1-timers", Size: 40, CRC32C: 0x22222222}, KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: 70, Offset: 0, Length: 40}}},
		FullSize:     6484,
		UploadedSize: 2348,
	}
	md.Operators[0].Subtasks[0].State.Weak = &checkpoint.WeakPositions{
		Inputs:       []checkpoint.WeakChannelPosition{{Buffers: 12, Records: 3000, Watermark: 1700000000000, Marked: true}, {Buffers: 4, Records: 10, Idle: true, EndOfData: true}},
		Outputs:      [][]uint64{{1500, 1490}},
		Determinants: 9,
		Logs:         &checkpoint.StateFile{Path: "chk-7/source-0.weaklog", Size: 512, CRC32C: 0x33333333},
	}
	return md
}

// A version-2 file, as this build writes them, decodes to the same
// metadata and re-encodes byte for byte: later builds (a version 3 with
// state schemas) must keep reading it.
func TestDecodeVersion2Golden(t *testing.T) {
	checkGolden(t, "testdata/metadata-v2.golden", 2, sampleV2Full(), *rewriteV2)
}

// checkGolden requires that the golden metadata file at path is of the
// given format version, decodes to want and re-encodes byte for byte.
// With rewrite it first writes want's encoding there: only when a golden
// file is introduced, never to make a failing test pass.
func checkGolden(t *testing.T, path string, version uint16, want *checkpoint.Metadata, rewrite bool) {
	t.Helper()
	if rewrite {
		b, err := Encode(want)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint16(golden[8:]); v != version {
		t.Fatalf("%s is version %d, want %d", path, v, version)
	}
	md, err := Decode(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(md, want) {
		t.Fatalf("%s decodes to\n%+v\nwant\n%+v", path, md, want)
	}
	again, err := Encode(md)
	if err != nil || !bytes.Equal(again, golden) {
		t.Fatalf("re-encoding %s differs (err %v)", path, err)
	}
}
