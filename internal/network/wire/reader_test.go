package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func stream() ([]byte, []int) {
	var b []byte
	var ends []int
	for _, s := range samples() {
		b = append(b, s.frame...)
		ends = append(ends, len(b))
	}
	return b, ends
}

// TestReaderChunkings reads the samples back to back through every chunking
// and buffer size; each frame must equal DecodeFrame's.
func TestReaderChunkings(t *testing.T) {
	all, _ := stream()
	chunkings := map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one-byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
		"data-err": iotest.DataErrReader,
	}
	for name, wrap := range chunkings {
		for _, size := range []int{HeaderSize, 31, 256, 0} {
			rd := NewReader(wrap(bytes.NewReader(all)), size)
			for _, s := range samples() {
				f, err := rd.Next()
				if err != nil {
					t.Fatalf("%s/%d: %s: %v", name, size, s.name, err)
				}
				want, _, _ := DecodeFrame(s.frame)
				if f.Header != want.Header || !bytes.Equal(f.Payload, want.Payload) {
					t.Fatalf("%s/%d: %s: read %+v, want %+v", name, size, s.name, f, want)
				}
			}
			if _, err := rd.Next(); err != io.EOF {
				t.Fatalf("%s/%d: after the last frame: %v, want io.EOF", name, size, err)
			}
			if size != 0 && len(rd.buf) != size {
				t.Fatalf("%s/%d: buffer left at %d bytes", name, size, len(rd.buf))
			}
		}
	}
}

// TestReaderTruncatedStream: a stream cut at any byte yields the frames it
// holds whole, then io.EOF at a frame boundary or io.ErrUnexpectedEOF
// inside a frame.
func TestReaderTruncatedStream(t *testing.T) {
	all, ends := stream()
	for cut := 0; cut < len(all); cut++ {
		rd := NewReader(iotest.HalfReader(bytes.NewReader(all[:cut])), 40)
		whole := 0
		for _, e := range ends {
			if e <= cut {
				whole++
			}
		}
		for i := 0; i < whole; i++ {
			if _, err := rd.Next(); err != nil {
				t.Fatalf("cut %d: frame %d: %v", cut, i, err)
			}
		}
		_, err := rd.Next()
		atBoundary := cut == 0 || (whole > 0 && ends[whole-1] == cut)
		switch {
		case atBoundary && err != io.EOF:
			t.Fatalf("cut %d at a frame boundary: %v, want io.EOF", cut, err)
		case !atBoundary && (!errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrMalformed)):
			t.Fatalf("cut %d inside a frame: %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
}

// TestReaderOversizedFrame: a frame bigger than the buffer is read whole
// into a one-off buffer, and the Reader returns to its own buffer after it.
func TestReaderOversizedFrame(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 1000)
	var b []byte
	b = AppendAddCredit(b, 1, 1)
	b = AppendData(b, 1, 0, DataMsg{Records: 1, Bytes: big})
	b = AppendAddCredit(b, 1, 2)
	b = AppendData(b, 1, 1, DataMsg{Records: 1, Bytes: big})
	b = AppendData(b, 1, 2, DataMsg{Records: 1, Bytes: big[:10]})
	rd := NewReader(iotest.HalfReader(bytes.NewReader(b)), 64)
	wantLen := []int{1, 1002, 1, 1002, 12}
	for i, n := range wantLen {
		f, err := rd.Next()
		if err != nil || len(f.Payload) != n {
			t.Fatalf("frame %d: %d payload bytes, %v; want %d", i, len(f.Payload), err, n)
		}
		if n == 1002 {
			d, err := DecodeData(f.Flags, f.Payload)
			if err != nil || !bytes.Equal(d.Bytes, big) {
				t.Fatalf("frame %d: oversized data decoded wrong: %v", i, err)
			}
		}
	}
	if len(rd.buf) != 64 {
		t.Fatalf("buffer is %d bytes after the oversized frames, want the reader's 64", len(rd.buf))
	}
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	b := AppendAddCredit(nil, 1, 1)
	rd := NewReader(io.MultiReader(bytes.NewReader(b[:5]), iotest.ErrReader(boom)), 0)
	if _, err := rd.Next(); !errors.Is(err, boom) || errors.Is(err, ErrMalformed) {
		t.Fatalf("Next over a failing stream: %v, want the read error", err)
	}
}

// TestReaderRefusesLengthBeforeReading: a garbage length fails at once,
// without waiting for (or allocating) the 4 GiB it announces.
func TestReaderRefusesLengthBeforeReading(t *testing.T) {
	rd := NewReader(iotest.OneByteReader(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff})), 0)
	if _, err := rd.Next(); defectOf(err) != DefectLength {
		t.Fatalf("Next = %v, want length out of range", err)
	}
	// A bad kind is refused once the header is in, before the payload.
	h := header(MaxLength, 42, 0, 1, 0)
	rd = NewReader(bytes.NewReader(h), 0)
	if _, err := rd.Next(); defectOf(err) != DefectKind || len(rd.buf) != DefaultReadBuffer {
		t.Fatalf("Next = %v with a %d-byte buffer, want unknown kind without growing", err, len(rd.buf))
	}
}

// cycle is an endless reader over the same bytes, for allocation counts.
type cycle struct {
	b   []byte
	off int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := copy(p, c.b[c.off:])
	c.off = (c.off + n) % len(c.b)
	return n, nil
}

func TestReaderNoAllocations(t *testing.T) {
	var b []byte
	for i := 0; i < 7; i++ { // 7 does not divide the buffer: frames straddle reads
		b = AppendData(b, 3, uint64(i), DataMsg{Backlog: 1, Records: 100, Bytes: make([]byte, 5000)})
		b = AppendEvent(b, 3, uint64(i), EventMsg{Kind: 1, Cancel: 0, Barrier: samplesBarrier})
		b = AppendAddCredit(b, 3, 1)
		b = AppendData(b, 4, uint64(i), DataMsg{Pos: LogPos{Buffers: uint64(i) + 1, Records: 100}, Records: 100, Bytes: make([]byte, 3000)})
		b = AppendRelease(b, 4, LogPos{Buffers: uint64(i) + 1, Records: 100})
	}
	rd := NewReader(&cycle{b: b}, 0)
	allocs := testing.AllocsPerRun(1000, func() {
		f, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch f.Kind {
		case Data:
			_, err = DecodeData(f.Flags, f.Payload)
		case Event:
			_, err = DecodeEvent(f.Flags, f.Payload)
		case AddCredit:
			_, err = DecodeAddCredit(f.Payload)
		case Release:
			_, err = DecodeRelease(f.Payload)
		}
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per frame, want 0", allocs)
	}
	dst := make([]byte, 0, 64<<10)
	payload := make([]byte, 5000)
	allocs = testing.AllocsPerRun(1000, func() {
		dst = AppendData(dst[:0], 3, 1, DataMsg{Backlog: 1, Records: 100, Bytes: payload})
		dst = AppendEvent(dst, 3, 2, EventMsg{Kind: 1, Barrier: samplesBarrier})
		dst = AppendAddCredit(dst, 3, 4)
		dst = AppendData(dst, 4, 1, DataMsg{Pos: LogPos{Buffers: 9, Records: 900}, Records: 100, Bytes: payload})
		dst = AppendEvent(dst, 4, 2, EventMsg{Kind: 3, Pos: LogPos{Buffers: 10, Records: 900}})
		dst = AppendRelease(dst, 4, LogPos{Buffers: 10, Records: 900})
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per append round, want 0", allocs)
	}
}
