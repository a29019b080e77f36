package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/weirstream/weir/internal/checkpoint"
)

// openChannelFile writes an unaligned checkpoint 3 and returns its channel
// state handle and the file's absolute path and contents.
func openChannelFile(t *testing.T, s *FS) (*checkpoint.ChannelStateHandle, string, []byte) {
	t.Helper()
	md := writeUnalignedCheckpoint(t, s, 3)
	h := md.Operators[1].Subtasks[1].State.Channels
	abs := filepath.Join(s.JobDir(), filepath.FromSlash(h.File.Path))
	data, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	return h, abs, data
}

func TestOpenFileStreams(t *testing.T) {
	s := openStore(t)
	h, _, data := openChannelFile(t, s)
	r, err := s.OpenFile(context.Background(), h.File)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := iotest.TestReader(r, data); err != nil {
		t.Fatal(err)
	}
	// What a restore does: frames straight from the checked stream.
	r2, err := s.OpenFile(context.Background(), h.File)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	fr := NewChannelFrameReader(r2, h)
	n := 0
	for {
		f, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := sampleFrames[n]; f.Channel != want.ch || string(f.Payload) != want.payload {
			t.Fatalf("frame %d: channel %d, %d bytes", n, f.Channel, len(f.Payload))
		}
		n++
	}
	if n != len(sampleFrames) {
		t.Fatalf("%d frames, want %d", n, len(sampleFrames))
	}
}

// A damaged file streams until its end, where the size or checksum check
// fails, naming the file, instead of io.EOF; a longer file never hands out
// more bytes than recorded.
func TestOpenFileDetectsDamage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		// want is the defect, given the damaged file's size and the
		// recorded one.
		want func(got, recorded int64) string
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, func(got, rec int64) string {
			return fmt.Sprintf("size mismatch: file has %d bytes, %d recorded", got, rec)
		}},
		{"empty", func(b []byte) []byte { return nil }, func(_, rec int64) string {
			return fmt.Sprintf("size mismatch: file has 0 bytes, %d recorded", rec)
		}},
		{"longer", func(b []byte) []byte { return append(b, 'x') }, func(_, rec int64) string {
			return fmt.Sprintf("size mismatch: file is longer than the %d bytes recorded", rec)
		}},
		{"bit flip", func(b []byte) []byte { b[len(b)/2] ^= 0x04; return b }, func(int64, int64) string { return "checksum mismatch: crc32c 0x" }},
		{"bit flip in the header", func(b []byte) []byte { b[0] ^= 0x01; return b }, func(int64, int64) string { return "checksum mismatch: crc32c 0x" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			h, abs, data := openChannelFile(t, s)
			damaged := tc.damage(bytes.Clone(data))
			if err := os.WriteFile(abs, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := s.OpenFile(context.Background(), h.File)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ReadAll: %v, want ErrCorrupt", err)
			}
			want := "state file " + abs + ": checkpoint data corrupt: " + tc.want(int64(len(damaged)), h.File.Size)
			if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "; restore from an older checkpoint or savepoint") {
				t.Fatalf("error\n got %q\nwant %q…", err, want)
			}
			if n := min(len(damaged), int(h.File.Size)); !bytes.Equal(got, damaged[:n]) {
				t.Fatalf("handed out %d bytes, want the first %d of the file", len(got), n)
			}
			// The error is sticky.
			if _, err2 := r.Read(make([]byte, 8)); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("read after the error: %v", err2)
			}
		})
	}
}

func TestOpenFileErrors(t *testing.T) {
	s := openStore(t)
	h, abs, _ := openChannelFile(t, s)
	if err := os.Remove(abs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenFile(context.Background(), h.File); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), abs+": checkpoint data corrupt: missing") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := s.OpenFile(context.Background(), checkpoint.StateFile{Path: "../other/x"}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "is not inside the job directory") {
		t.Fatalf("path outside the job directory: %v", err)
	}

	s2 := openStore(t)
	h2, _, _ := openChannelFile(t, s2)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := s2.OpenFile(ctx, h2.File)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Read(make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v, want context.Canceled", err)
	}
	if _, err := s2.OpenFile(ctx, h2.File); !errors.Is(err, context.Canceled) {
		t.Fatalf("open after cancel: %v, want context.Canceled", err)
	}
}

// Reading frames from a damaged file reports OpenFile's error, which names
// the file and the defect, not a frame-format error around it.
func TestChannelFrameReaderPassesSourceErrors(t *testing.T) {
	s := openStore(t)
	h, abs, data := openChannelFile(t, s)
	if err := os.WriteFile(abs, data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := s.OpenFile(context.Background(), h.File)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fr := NewChannelFrameReader(r, h)
	for {
		_, err = fr.Next()
		if err != nil {
			break
		}
	}
	want := fmt.Sprintf("state file %s: checkpoint data corrupt: size mismatch: file has %d bytes, %d recorded", abs, len(data)-3, len(data))
	if !errors.Is(err, ErrCorrupt) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error\n got %v\nwant %q…", err, want)
	}
}
