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
