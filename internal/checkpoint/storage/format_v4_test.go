package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

var rewriteV4 = flag.Bool("rewrite-v4-golden", false, "write testdata/metadata-v4.golden from today's encoder (only when introducing it; never to make a failing test pass)")

// sampleV4 is sampleV3 with transaction blobs on a sink subtask: one in
// the shared area, as a periodic checkpoint has them.
func sampleV4(t testing.TB) *checkpoint.Metadata {
	md := sampleV3(t)
	md.Operators[0].Subtasks[0].State.Blobs = []checkpoint.StateFile{
		{Path: "shared/" + checkpoint.BlobName(6, "9f1c2b3a4d5e6f70"), Size: 2048, CRC32C: 0xcafef00d},
		{Path: "shared/" + checkpoint.BlobName(7, "0123456789abcdef"), Size: 17, CRC32C: 0x0badbeef},
	}
	return md
}

// A version-4 file, as this build writes them, decodes to the same
// metadata and re-encodes byte for byte. It pins the JSON name of the
// blobs and the blob naming the sweep parses.
func TestDecodeVersion4Golden(t *testing.T) {
	checkGolden(t, "testdata/metadata-v4.golden", 4, sampleV4(t), *rewriteV4)
}

// Blobs alone decide on version 4; without them the same metadata is
// version 3, readable by the builds before blobs. A file of an older
// version that holds blobs was not written by weir as it claims: a build
// of that version would not have counted them as references.
func TestVersion4OnlyWithBlobs(t *testing.T) {
	md := sampleV4(t)
	b, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint16(b[8:]); v != 4 {
		t.Fatalf("metadata with blobs written as version %d, want 4", v)
	}
	old := append([]byte(nil), b...)
	old[9] = 3
	if _, err := Decode(reseal(old)); err == nil || !strings.Contains(err.Error(), "holds transaction blobs, which only version 4 can") {
		t.Fatalf("version 3 with blobs: %v", err)
	}
	md.Operators[0].Subtasks[0].State.Blobs = nil
	b, err = Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint16(b[8:]); v != 3 {
		t.Fatalf("metadata without blobs written as version %d, want 3", v)
	}
}

func TestDecodeRejectsBadBlobs(t *testing.T) {
	for _, tc := range []struct {
		name string
		blob checkpoint.StateFile
		want string
	}{
		{"not a blob", checkpoint.StateFile{Path: "shared/3f2a-000012.sst"}, "not a blob's name"},
		{"no id", checkpoint.StateFile{Path: "shared/blob-x-1"}, "not a blob's name"},
		{"other folder", checkpoint.StateFile{Path: "chk-6/" + checkpoint.BlobName(6, "ab")}, "neither in shared/ nor in chk-7/"},
		{"escapes", checkpoint.StateFile{Path: "../x/" + checkpoint.BlobName(6, "ab")}, "neither in shared/"},
		{"negative size", checkpoint.StateFile{Path: "shared/" + checkpoint.BlobName(6, "ab"), Size: -1}, "negative size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := sampleV4(t)
			md.Operators[0].Subtasks[0].State.Blobs = []checkpoint.StateFile{tc.blob}
			_, err := Decode(encodeV4(t, md))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	md := sampleV4(t)
	st := &md.Operators[0].Subtasks[0].State
	st.Blobs = append(st.Blobs, st.Blobs[0])
	if _, err := Decode(encodeV4(t, md)); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Fatalf("a blob listed twice: %v", err)
	}
}

// encodeV4 encodes md as version 4 (Encode does not validate
// blobs; Decode does).
func encodeV4(t *testing.T, md *checkpoint.Metadata) []byte {
	t.Helper()
	b, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A savepoint copies the blobs of its checkpoint from the shared area
// into its own folder under the same names: it stays self-contained when
// the job's shared area is gone, and the handles, which name blobs by
// base name, still find them.
func TestSavepointCopiesBlobs(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	name := checkpoint.BlobName(4, "00aa11bb22cc33dd")
	payload := []byte("messages of a pending transaction")
	f, err := s.WriteSharedFile(ctx, name, func(w io.Writer) error { _, err := w.Write(payload); return err })
	if err != nil {
		t.Fatal(err)
	}
	md := sampleMetadata("job", 4)
	md.Operators[0].Subtasks[0].State.Blobs = []checkpoint.StateFile{f}
	if _, err := s.WriteMetadata(ctx, md); err != nil {
		t.Fatal(err)
	}
	if refs := md.SharedRefs(); len(refs) != 1 || refs[0].Name != name {
		t.Fatalf("shared refs %+v, want the blob %s", refs, name)
	}
	// A blob that does not verify fails the load, as any state file.
	if _, _, err := s.LoadLatest(ctx); err != nil {
		t.Fatal(err)
	}
	dir, err := s.Savepoint(ctx, 4, filepath.Join(t.TempDir(), "saves"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveShared([]string{name}); err != nil {
		t.Fatal(err)
	}
	got, view, err := LoadPath(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	blobs := got.Operators[0].Subtasks[0].State.Blobs
	if len(blobs) != 1 || blobs[0].Path != "chk-4/"+name || blobs[0].Size != f.Size || blobs[0].CRC32C != f.CRC32C {
		t.Fatalf("savepoint blobs %+v", blobs)
	}
	if refs := got.SharedRefs(); len(refs) != 0 {
		t.Fatalf("a savepoint references shared files %+v", refs)
	}
	r, err := view.OpenFile(ctx, blobs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, err := io.ReadAll(r); err != nil || !bytes.Equal(b, payload) {
		t.Fatalf("savepoint blob reads %q, %v", b, err)
	}
	// The checkpoint itself no longer loads: its blob is gone.
	if _, _, err := s.LoadLatest(ctx); err == nil {
		t.Fatal("a checkpoint whose blob is missing loaded")
	}
}
