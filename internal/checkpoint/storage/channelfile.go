package storage

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
)

// The channel-state file of one subtask in an unaligned checkpoint:
//
//	file  = "WEIRCHS\x00" version(1 byte = 1) frame*
//	frame = uvarint(ch) uvarint(len) payload(len bytes)
//
// ch is the consumer's input-gate channel the payload was polled from, and
// the payload is one batch as the edge's channel codec encodes it; this
// layer treats it as opaque bytes. Frames are in the order they were
// recorded, which keeps each channel's order. The handle's segments group
// consecutive frames of one channel; together they cover every frame.
//
// The writer side is two append functions, so the recorder can build its
// chunks without allocating; the reader streams (a file may be larger than
// memory) and, given the handle, checks the file against it.
const (
	// ChannelStateFileMagic opens every channel-state file.
	ChannelStateFileMagic = "WEIRCHS\x00"
	// ChannelStateFileVersion is the layout version this build writes and reads.
	ChannelStateFileVersion byte = 1
	// ChannelStateHeaderLen is the size of the file header; the first
	// frame, and so the first segment, starts there.
	ChannelStateHeaderLen = len(ChannelStateFileMagic) + 1
)

// maxFrameChannel bounds a frame's channel index: a gate of more channels
// is not a real job, so a larger value means bad bytes.
const maxFrameChannel = math.MaxInt32

// payloadStep bounds how much a frame's payload buffer grows before the
// bytes are there: a damaged length must not allocate gigabytes up front.
const payloadStep = 1 << 20

// AppendChannelStateHeader appends the file header to dst.
func AppendChannelStateHeader(dst []byte) []byte {
	return append(append(dst, ChannelStateFileMagic...), ChannelStateFileVersion)
}

// AppendChannelFrame appends one frame of gate channel ch (≥ 0) holding
// payload to dst. It allocates only when dst must grow.
func AppendChannelFrame(dst []byte, ch int, payload []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(ch))
	dst = binary.AppendUvarint(dst, uint64(len(payload)))
	return append(dst, payload...)
}

// ChannelFrame is one frame read from a channel-state file.
type ChannelFrame struct {
	// Channel is the gate channel the frame was recorded from.
	Channel int
	// Index is the position in the handle's Channels of the input channel
	// whose segment holds the frame; -1 when reading without a handle.
	Index int
	// Offset is the file offset of the frame's first byte.
	Offset int64
	// Payload is the frame's bytes, valid until the next call to Next.
	Payload []byte
}

// ChannelFrameReader reads the frames of a channel-state file in file
// order. Without a handle it checks the layout only. With one it also
// checks that the frames tile the handle's segments exactly — every frame
// inside one segment, every segment ending on a frame boundary, no frame
// outside a segment, no segment past the end — and that each input
// channel's frames carry one gate channel, distinct from the others'. Its
// errors wrap ErrCorrupt and name the offset, not the file: callers do.
type ChannelFrameReader struct {
	src  *srcReader
	br   *bufio.Reader
	h    *checkpoint.ChannelStateHandle
	segs []segRef // the handle's segments by offset
	seg  int      // the segment the next frame must lie in (or start)
	chOf []int    // per handle channel: its gate channel, -1 until seen
	off  int64    // file offset of the next byte
	buf  []byte
	err  error // sticky: after an error or EOF, Next keeps returning it
}

// segRef is a segment with the handle channel it belongs to.
type segRef struct {
	off, end int64
	idx      int
}

// NewChannelFrameReader returns a reader of the channel-state file r. h
// may be nil; with a handle, frames are checked against it (see
// ChannelFrameReader). The header is read by the first Next.
func NewChannelFrameReader(r io.Reader, h *checkpoint.ChannelStateHandle) *ChannelFrameReader {
	src := &srcReader{r: r}
	fr := &ChannelFrameReader{src: src, br: bufio.NewReaderSize(src, 64<<10), h: h}
	if h != nil {
		fr.chOf = make([]int, len(h.Channels))
		for i, c := range h.Channels {
			fr.chOf[i] = -1
			for _, s := range c.Segments {
				fr.segs = append(fr.segs, segRef{off: s.Offset, end: s.Offset + s.Length, idx: i})
			}
		}
		slices.SortFunc(fr.segs, func(a, b segRef) int { return cmp.Compare(a.off, b.off) })
		for i, s := range fr.segs {
			if s.off < int64(ChannelStateHeaderLen) || s.end <= s.off || i > 0 && s.off < fr.segs[i-1].end {
				fr.err = fmt.Errorf("%w: channel-state handle: segment [%d,+%d) of input channel %d is empty, overlaps another or lies in the header", ErrCorrupt, s.off, s.end-s.off, s.idx)
				break
			}
		}
	}
	return fr
}

// Next returns the next frame, or io.EOF after the last one once the whole
// file checked out.
func (r *ChannelFrameReader) Next() (ChannelFrame, error) {
	if r.err != nil {
		return ChannelFrame{}, r.err
	}
	f, err := r.next()
	if err != nil {
		if r.src.err != nil {
			// The source failed (e.g. OpenFile's size or checksum check,
			// or a cancelled context): its error says what happened,
			// not a frame-format message built around it.
			err = r.src.err
		}
		r.err = err
		return ChannelFrame{}, err
	}
	return f, nil
}

func (r *ChannelFrameReader) next() (ChannelFrame, error) {
	if r.off == 0 {
		if err := r.readHeader(); err != nil {
			return ChannelFrame{}, err
		}
	}
	start := r.off
	ch, n, err := readUvarint(r.br)
	switch {
	case errors.Is(err, io.EOF) && n == 0:
		return ChannelFrame{}, r.atEnd()
	case err != nil:
		return ChannelFrame{}, fmt.Errorf("%w: channel-state file: frame at offset %d: channel: %w", ErrCorrupt, start, err)
	case ch > maxFrameChannel:
		return ChannelFrame{}, fmt.Errorf("%w: channel-state file: frame at offset %d: channel %d is out of range", ErrCorrupt, start, ch)
	}
	r.off += int64(n)
	length, n, err := readUvarint(r.br)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF // only a frame's start may end the file
	}
	if err != nil {
		return ChannelFrame{}, fmt.Errorf("%w: channel-state file: frame at offset %d: length: %w", ErrCorrupt, start, err)
	}
	r.off += int64(n)
	idx := -1
	if r.h != nil {
		if idx, err = r.place(start, r.off, length, int(ch)); err != nil {
			return ChannelFrame{}, fmt.Errorf("%w: channel-state file: frame at offset %d of gate channel %d: %w", ErrCorrupt, start, ch, err)
		}
	}
	if err := r.readPayload(length); err != nil {
		return ChannelFrame{}, fmt.Errorf("%w: channel-state file: frame at offset %d: %d-byte payload: %w", ErrCorrupt, start, length, err)
	}
	return ChannelFrame{Channel: int(ch), Index: idx, Offset: start, Payload: r.buf}, nil
}

func (r *ChannelFrameReader) readHeader() error {
	var hdr [ChannelStateHeaderLen]byte
	n, err := io.ReadFull(r.br, hdr[:])
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: channel-state file truncated: %d bytes, shorter than the %d-byte header", ErrCorrupt, n, ChannelStateHeaderLen)
		}
		return err
	}
	if string(hdr[:len(ChannelStateFileMagic)]) != ChannelStateFileMagic {
		return fmt.Errorf("%w: not a weir channel-state file: bad magic %q, want %q", ErrCorrupt, hdr[:len(ChannelStateFileMagic)], ChannelStateFileMagic)
	}
	if v := hdr[len(ChannelStateFileMagic)]; v != ChannelStateFileVersion {
		if v > ChannelStateFileVersion {
			return fmt.Errorf("%w: channel-state file version %d was written by a newer weir (this build reads version %d); restore with a newer weir", ErrCorrupt, v, ChannelStateFileVersion)
		}
		return fmt.Errorf("%w: unknown channel-state file version %d (this build reads version %d)", ErrCorrupt, v, ChannelStateFileVersion)
	}
	r.off = int64(ChannelStateHeaderLen)
	return nil
}

// place finds the segment of the frame [start, payloadAt+length) and
// checks its gate channel; it runs before the payload is read, so a bad
// length fails here instead of allocating.
func (r *ChannelFrameReader) place(start, payloadAt int64, length uint64, ch int) (int, error) {
	if r.seg < len(r.segs) && start == r.segs[r.seg].end {
		r.seg++
	}
	// Frames are contiguous and each ends inside its segment, so a frame
	// starts either inside the current segment or at its end (handled
	// above); before the segment means a gap no segment covers.
	if r.seg == len(r.segs) || start < r.segs[r.seg].off {
		return 0, errors.New("lies outside every segment of the handle")
	}
	s := r.segs[r.seg]
	if length > uint64(s.end-payloadAt) {
		return 0, fmt.Errorf("its %d-byte payload crosses the end of segment [%d,+%d) of input channel %d", length, s.off, s.end-s.off, s.idx)
	}
	switch prev := r.chOf[s.idx]; {
	case prev == ch:
	case prev >= 0:
		return 0, fmt.Errorf("input channel %d also has frames of gate channel %d", s.idx, prev)
	default:
		if other := slices.Index(r.chOf, ch); other >= 0 {
			return 0, fmt.Errorf("frames of gate channel %d belong to input channels %d and %d", ch, other, s.idx)
		}
		r.chOf[s.idx] = ch
	}
	return s.idx, nil
}

// atEnd checks, at a clean end of the frames, that no segment lies beyond.
func (r *ChannelFrameReader) atEnd() error {
	if r.seg < len(r.segs) && r.off == r.segs[r.seg].end {
		r.seg++
	}
	if r.seg < len(r.segs) {
		s := r.segs[r.seg]
		return fmt.Errorf("%w: channel-state file ends at offset %d, before the end of segment [%d,+%d) of input channel %d", ErrCorrupt, r.off, s.off, s.end-s.off, s.idx)
	}
	return io.EOF
}

// srcReader remembers the first error of the file's reader other than
// io.EOF, which the frame reader reports as a format error (truncation).
type srcReader struct {
	r   io.Reader
	err error
}

func (s *srcReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && s.err == nil {
		s.err = err
	}
	return n, err
}

// readPayload reads n bytes into r.buf, growing it only as bytes arrive.
func (r *ChannelFrameReader) readPayload(n uint64) error {
	r.buf = r.buf[:0]
	for uint64(len(r.buf)) < n {
		step := int(min(n-uint64(len(r.buf)), payloadStep))
		at := len(r.buf)
		r.buf = slices.Grow(r.buf, step)[:at+step]
		got, err := io.ReadFull(r.br, r.buf[at:])
		r.off += int64(got)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("truncated after %d bytes", at+got)
			}
			return err
		}
	}
	return nil
}

// readUvarint reads a canonical (shortest-form) uvarint and how many bytes
// it took. A clean EOF before the first byte is io.EOF with n == 0; an EOF
// inside it io.ErrUnexpectedEOF. Only the shortest form is accepted, so
// that every accepted file is exactly what the writer produces.
func readUvarint(br *bufio.Reader) (uint64, int, error) {
	var v uint64
	for i := range binary.MaxVarintLen64 {
		b, err := br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && i > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, i, err
		}
		if i == binary.MaxVarintLen64-1 && b > 1 {
			return 0, i + 1, errors.New("varint overflows 64 bits")
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			if b == 0 && i > 0 {
				return 0, i + 1, errors.New("varint not in its shortest form")
			}
			return v, i + 1, nil
		}
	}
	return 0, binary.MaxVarintLen64, errors.New("varint overflows 64 bits")
}
