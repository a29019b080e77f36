package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultReadBuffer is the Reader's buffer when NewReader is given 0: two
// 32 KiB segments, so a steady stream of full Data frames needs one read
// per frame or fewer.
const DefaultReadBuffer = 64 << 10

// Reader reads frames from a byte stream through its own buffer, so a
// connection's reader goroutine needs no bufio and makes no allocation per
// frame: a frame's Payload aliases the buffer until the next call of Next.
//
// A frame larger than the buffer is read into a one-off buffer of its size,
// which is dropped again once the bytes waiting fit the normal buffer: one
// oversized record must not pin up to 64 MiB for the connection's life.
//
// Next checks the header (length, kind, flags, channel, sequence rules)
// before it reads a payload, so a garbage length is refused without reading
// or allocating for it. Payloads are checked by the kind's decoder. Errors
// are sticky: after one, every call returns it.
type Reader struct {
	src   io.Reader
	small []byte // the normal buffer
	buf   []byte // small, or a one-off buffer for an oversized frame
	r, w  int    // buf[r:w] holds bytes read and not yet returned
	err   error
}

// NewReader returns a Reader over src with a buffer of size bytes
// (DefaultReadBuffer if 0). It panics on a buffer smaller than HeaderSize.
func NewReader(src io.Reader, size int) *Reader {
	if size == 0 {
		size = DefaultReadBuffer
	}
	if size < HeaderSize {
		panic(fmt.Sprintf("wire: NewReader with a %d-byte buffer, at least %d", size, HeaderSize))
	}
	b := make([]byte, size)
	return &Reader{src: src, small: b, buf: b}
}

// Next returns the next frame. At a clean end of the stream between frames
// it returns io.EOF; an end inside a frame gives an error wrapping
// io.ErrUnexpectedEOF (the peer went away, not a malformed frame); bad bytes
// give an error wrapping ErrMalformed; a failed read returns its error.
func (rd *Reader) Next() (Frame, error) {
	if rd.err != nil {
		return Frame{}, rd.err
	}
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
	}
	if len(rd.buf) > len(rd.small) && rd.w-rd.r <= len(rd.small) {
		rd.w = copy(rd.small, rd.buf[rd.r:rd.w])
		rd.r, rd.buf = 0, rd.small
	}
	if err := rd.fill(4, 0); err != nil {
		return Frame{}, rd.fail(err)
	}
	n := binary.BigEndian.Uint32(rd.buf[rd.r:])
	if err := checkLength(n); err != nil {
		return Frame{}, rd.fail(err)
	}
	total := 4 + int(n)
	if err := rd.fill(HeaderSize, total); err != nil {
		return Frame{}, rd.fail(err)
	}
	h := parseHeader(rd.buf[rd.r:])
	if err := h.check(); err != nil {
		return Frame{}, rd.fail(err)
	}
	if err := rd.fill(total, total); err != nil {
		return Frame{}, rd.fail(err)
	}
	start := rd.r
	rd.r += total
	return Frame{Header: h, Payload: rd.buf[start+HeaderSize : start+total : start+total]}, nil
}

// Buffered returns the bytes read from the stream and not yet returned as
// frames.
func (rd *Reader) Buffered() int { return rd.w - rd.r }

func (rd *Reader) fail(err error) error {
	rd.err = err
	return err
}

// fill makes buf[r:w] hold at least n bytes of a frame of total bytes
// (0: not known yet), compacting or growing the buffer first.
func (rd *Reader) fill(n, total int) error {
	if rd.w-rd.r >= n {
		return nil
	}
	if rd.r+n > len(rd.buf) {
		if need := max(n, total); need > len(rd.buf) {
			nb := make([]byte, need)
			rd.w = copy(nb, rd.buf[rd.r:rd.w])
			rd.r, rd.buf = 0, nb
		} else {
			rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
			rd.r = 0
		}
	}
	for empty := 0; rd.w-rd.r < n; {
		m, err := rd.src.Read(rd.buf[rd.w:])
		rd.w += m
		if rd.w-rd.r >= n {
			return nil // data and error together: the error comes back next read
		}
		switch {
		case errors.Is(err, io.EOF):
			if rd.w == rd.r {
				return io.EOF
			}
			if total == 0 {
				total = n
			}
			return fmt.Errorf("stream ended %d bytes into a %d-byte frame: %w", rd.w-rd.r, total, io.ErrUnexpectedEOF)
		case err != nil:
			return fmt.Errorf("read frame: %w", err)
		case m == 0:
			if empty++; empty == 100 {
				return fmt.Errorf("read frame: %w", io.ErrNoProgress)
			}
		}
	}
	return nil
}
