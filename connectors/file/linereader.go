package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLineLength bounds the length of one input line. A longer line fails the
// read instead of growing the buffer without limit (usually the input is not
// line-oriented at all).
const MaxLineLength = 64 << 20

const initialReadBuffer = 64 << 10

// LineReader reads the lines of a list of files, in order, in batches. Lines
// are returned without their '\n' (a '\r' before it is kept); the last line
// of a file needs no trailing newline. It reuses one buffer: the lines of a
// batch stay valid until the next call to Next.
type LineReader struct {
	files []string
	pos   Position // of buf[start], the first unconsumed byte
	f     *os.File // files[pos.File], nil when not open
	eof   bool     // f has no more bytes
	buf   []byte
	start int
	end   int
	err   error // sticky: once a read fails, every later Next fails
}

// NewLineReader returns a reader of files that starts at pos (Position{} for
// the beginning). It fails if pos is outside the files or a file cannot be
// opened; an Offset beyond the end of its file means the file shrank since
// the position was taken, which is an error too.
func NewLineReader(files []string, pos Position) (*LineReader, error) {
	if pos.File < 0 || pos.File > len(files) || pos.Offset < 0 || (pos.File == len(files) && pos.Offset != 0) {
		return nil, fmt.Errorf("file source: position %+v is outside the %d input files; restore with the file list the position was taken with", pos, len(files))
	}
	r := &LineReader{files: files, pos: pos, buf: make([]byte, initialReadBuffer)}
	if pos.File < len(files) {
		if err := r.openCurrent(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *LineReader) openCurrent() error {
	name := r.files[r.pos.File]
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("file source: %w", err)
	}
	if r.pos.Offset > 0 {
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("file source: %w", err)
		}
		if r.pos.Offset > fi.Size() {
			f.Close()
			return fmt.Errorf("file source: resume %s at offset %d: the file has only %d bytes; it changed since the checkpoint", name, r.pos.Offset, fi.Size())
		}
		if _, err := f.Seek(r.pos.Offset, io.SeekStart); err != nil {
			f.Close()
			return fmt.Errorf("file source: %w", err)
		}
	}
	r.f, r.eof = f, false
	return nil
}

// Next appends up to max lines to dst[:0] and returns them with the position
// after the last of them. A batch may hold fewer than max lines while input
// remains (it stops rather than move bytes the batch points into); only
// io.EOF, returned with no lines, means the last file is done. Any other
// error comes with the lines read before it and the position after those,
// and repeats on every later call.
func (r *LineReader) Next(max int, dst [][]byte) ([][]byte, Position, error) {
	dst = dst[:0]
	if r.err != nil {
		return dst, r.pos, r.err
	}
	if max <= 0 {
		return dst, r.pos, fmt.Errorf("file source: batch size %d, want at least 1", max)
	}
	// The previous batch is no longer referenced: move the partial line to
	// the front so this batch has the whole buffer.
	r.end = copy(r.buf, r.buf[r.start:r.end])
	r.start = 0
	for len(dst) < max {
		if i := bytes.IndexByte(r.buf[r.start:r.end], '\n'); i >= 0 {
			dst = append(dst, r.buf[r.start:r.start+i:r.start+i])
			r.start += i + 1
			r.pos.Offset += int64(i + 1)
			continue
		}
		if r.f == nil {
			break // past the last file
		}
		if r.eof {
			if n := r.end - r.start; n > 0 { // last line without '\n'
				dst = append(dst, r.buf[r.start:r.end:r.end])
				r.start = r.end
				r.pos.Offset += int64(n)
			}
			if err := r.advance(); err != nil {
				r.err = err
				return dst, r.pos, err
			}
			continue
		}
		if r.end == len(r.buf) {
			if len(dst) > 0 {
				break // keep this batch's lines intact
			}
			if err := r.makeRoom(); err != nil {
				r.err = err
				return dst, r.pos, err
			}
		}
		n, err := r.f.Read(r.buf[r.end:])
		r.end += n
		if errors.Is(err, io.EOF) {
			r.eof = true
		} else if err != nil {
			r.err = fmt.Errorf("file source: read %s: %w", r.files[r.pos.File], err)
			return dst, r.pos, r.err
		}
	}
	if len(dst) == 0 && r.f == nil {
		return dst, r.pos, io.EOF
	}
	return dst, r.pos, nil
}

// advance closes the finished file and opens the next one, if any.
func (r *LineReader) advance() error {
	err := r.f.Close()
	r.f = nil
	if err != nil {
		return fmt.Errorf("file source: close %s: %w", r.files[r.pos.File], err)
	}
	r.pos = Position{File: r.pos.File + 1}
	if r.pos.File == len(r.files) {
		return nil
	}
	return r.openCurrent()
}

// makeRoom is called with no lines handed out and the buffer full of one
// partial line: compact it to the front, or grow the buffer.
func (r *LineReader) makeRoom() error {
	if r.start > 0 {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
		return nil
	}
	if len(r.buf) >= MaxLineLength {
		return fmt.Errorf("file source: %s: line at offset %d is longer than %d bytes; is the input line-oriented?", r.files[r.pos.File], r.pos.Offset, MaxLineLength)
	}
	grown := make([]byte, min(2*len(r.buf), MaxLineLength))
	r.end = copy(grown, r.buf[r.start:r.end])
	r.start = 0
	r.buf = grown
	return nil
}

// Close closes the current file. The reader cannot be used afterwards.
func (r *LineReader) Close() error {
	r.err = errors.New("file source: line reader used after Close")
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
