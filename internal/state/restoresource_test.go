package state

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/weirstream/weir/internal/codec"
)

// TestStreamedSourceTruncated: a streamed file that ends before a block
// its index names fails with ErrCorrupt naming the file and key group,
// even when its reader does not check the size itself.
func TestStreamedSourceTruncated(t *testing.T) {
	src := sampleSnapshot(t)
	last := src.KeyGroups[len(src.KeyGroups)-1]
	short := BytesSource("short.keyed", src.Data[:last.Offset+last.Length/2], src.KeyGroups)
	short.Size = int64(len(src.Data)) // the index and size promise more
	err := tryRestore(t, short, false)
	if !errors.Is(err, codec.ErrCorrupt) || !strings.Contains(err.Error(), "short.keyed") || !strings.Contains(err.Error(), "file ends before") {
		t.Errorf("restore of a truncated file: %v; want an ErrCorrupt naming short.keyed", err)
	}
}

// TestStreamedSourceReadToEnd: the restore reads a streamed file to its
// end, so the verdict its reader gives at the end (a checksum mismatch)
// fails the restore even after every block was decoded.
func TestStreamedSourceReadToEnd(t *testing.T) {
	src := sampleSnapshot(t)
	bad := errors.New("checksum mismatch at the end")
	streamed := src
	streamed.Data = nil
	streamed.Size = int64(len(src.Data)) + 10 // bytes after the last block
	streamed.Open = func(context.Context) (io.ReadCloser, error) {
		r := io.MultiReader(strings.NewReader(string(src.Data)), strings.NewReader("0123456789"), iotest.ErrReader(bad))
		return io.NopCloser(r), nil
	}
	if err := tryRestore(t, streamed, false); !errors.Is(err, bad) {
		t.Errorf("restore: %v; want the reader's error at the end of the file", err)
	}
}

// TestStreamedSourceBlockOutsideFile: an index entry past the recorded
// size is refused before the file is opened (no allocation of a length
// read from a damaged index).
func TestStreamedSourceBlockOutsideFile(t *testing.T) {
	src := sampleSnapshot(t)
	s := BytesSource("big.keyed", src.Data, src.KeyGroups)
	s.KeyGroups = append(s.KeyGroups[:0:0], s.KeyGroups...)
	s.KeyGroups[0].Length = 1 << 40
	s.Open = func(context.Context) (io.ReadCloser, error) { t.Fatal("opened"); return nil, nil }
	if err := tryRestore(t, s, false); !errors.Is(err, codec.ErrCorrupt) || !strings.Contains(err.Error(), "outside") {
		t.Errorf("restore: %v; want an ErrCorrupt about a block outside the file", err)
	}
}
