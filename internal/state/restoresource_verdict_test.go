package state

import (
	"context"
	"errors"
	"io"
	"testing"
)

// verdictOnce hands out the whole file together with its verdict in one
// Read, then reports a plain end of file: a reader that does not repeat
// its error. (io.Reader allows returning data and an error together.)
type verdictOnce struct {
	data []byte
	err  error
	done bool
}

func (r *verdictOnce) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	r.done = true
	return copy(p, r.data), r.err
}

// TestStreamedSourceVerdictWithLastBytes: a source's reader that returns
// its last bytes together with its verdict (a checksum mismatch) fails the
// restore even though it answers io.EOF afterwards. The read buffer keeps
// that error; reading the rest of the file must not bypass it.
func TestStreamedSourceVerdictWithLastBytes(t *testing.T) {
	src := sampleSnapshot(t)
	bad := errors.New("checksum mismatch at the end")
	streamed := src
	streamed.Data = nil
	streamed.Size = int64(len(src.Data))
	streamed.Open = func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(&verdictOnce{data: src.Data, err: bad}), nil
	}
	if err := tryRestore(t, streamed, false); !errors.Is(err, bad) {
		t.Errorf("restore: %v; want the reader's verdict, returned with the file's last bytes", err)
	}
}

// TestRestoreStopsWhenCancelled: a cancelled restore stops before its
// first block, for a source held in memory and for a streamed source whose
// reader does not look at ctx, and closes what it opened.
func TestRestoreStopsWhenCancelled(t *testing.T) {
	src := sampleSnapshot(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	closed := false
	streamed := BytesSource("s.keyed", src.Data, src.KeyGroups)
	streamed.Open = func(context.Context) (io.ReadCloser, error) {
		return closeFunc{Reader: bytesReader(src.Data), close: func() { closed = true }}, nil
	}
	for _, s := range []RestoreSource{src, streamed} {
		n := 0
		err := ForEachBlock(ctx, []RestoreSource{s}, fullRange, func(int, []byte) error { n++; return nil })
		if !errors.Is(err, context.Canceled) || n != 0 {
			t.Errorf("%s: cancelled restore: %v after %d blocks; want context.Canceled before the first", sourceName(s), err, n)
		}
	}
	if !closed {
		t.Error("the streamed source was not closed")
	}
}

type closeFunc struct {
	io.Reader
	close func()
}

func (c closeFunc) Close() error { c.close(); return nil }

func bytesReader(b []byte) io.Reader { return &verdictOnce{data: b, err: io.EOF} }
