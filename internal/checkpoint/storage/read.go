package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/weirstream/weir/internal/checkpoint"
)

// ReadFile returns the contents of a state file after checking them against
// the size and CRC32C recorded in f. A missing, short, long or damaged file
// yields an error wrapping ErrCorrupt that names the absolute path.
func (s *FS) ReadFile(ctx context.Context, f checkpoint.StateFile) ([]byte, error) {
	abs, err := s.statePath(f)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read state file %s: %w", abs, err)
	}
	var buf bytes.Buffer
	if err := s.checkStateFile(ctx, abs, f, &buf); err != nil {
		return nil, fmt.Errorf("read state file %s: %w", abs, err)
	}
	return buf.Bytes(), nil
}

// statePath resolves a StateFile path against the job directory, refusing
// paths that would leave it (a damaged or hostile _metadata must not make a
// restore read arbitrary files).
func (s *FS) statePath(f checkpoint.StateFile) (string, error) {
	p := filepath.FromSlash(f.Path)
	if !filepath.IsLocal(p) {
		return "", fmt.Errorf("%w: state file path %q is not inside the job directory %s", ErrCorrupt, f.Path, s.jobDir)
	}
	return filepath.Join(s.jobDir, p), nil
}

// checkStateFile streams the file at abs into sink (nil: discard), checking
// its size and checksum against f. The error does not name the file; callers
// name it the way their message needs.
func (s *FS) checkStateFile(ctx context.Context, abs string, f checkpoint.StateFile, sink io.Writer) error {
	r, err := s.fs.Open(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: missing", ErrCorrupt)
		}
		return err
	}
	defer r.Close()
	if sink == nil {
		sink = io.Discard
	}
	hw := &hashWriter{ctx: ctx, w: sink}
	// Reading one byte past the recorded size tells "too long" from "right
	// size" without trusting a Stat.
	if _, err := io.Copy(hw, io.LimitReader(r, f.Size+1)); err != nil {
		return err
	}
	switch {
	case hw.n > f.Size:
		return fmt.Errorf("%w: size mismatch: file is longer than the %d bytes recorded", ErrCorrupt, f.Size)
	case hw.n < f.Size:
		return fmt.Errorf("%w: size mismatch: file has %d bytes, %d recorded", ErrCorrupt, hw.n, f.Size)
	case hw.crc != f.CRC32C:
		return fmt.Errorf("%w: checksum mismatch: crc32c 0x%08x, 0x%08x recorded", ErrCorrupt, hw.crc, f.CRC32C)
	}
	return nil
}

// OpenFile opens a state file for streaming, for files too large to read
// whole (channel state is replayed batch by batch). The reader counts and
// checksums what passes through it and checks both against f when the file
// ends: a file that is short, long or damaged fails with an error wrapping
// ErrCorrupt that names the path, instead of io.EOF. So a caller must treat
// what it read as provisional until it has seen io.EOF. A missing file
// fails here already. Reads stop once ctx is done.
func (s *FS) OpenFile(ctx context.Context, f checkpoint.StateFile) (io.ReadCloser, error) {
	abs, err := s.statePath(f)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open state file %s: %w", abs, err)
	}
	r, err := s.fs.Open(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open state file %s: %w: missing", abs, ErrCorrupt)
		}
		return nil, fmt.Errorf("open state file %s: %w", abs, err)
	}
	return &checkedReader{ctx: ctx, r: r, abs: abs, want: f}, nil
}

// checkedReader verifies a state file's size and checksum as it is read.
type checkedReader struct {
	ctx  context.Context
	r    io.ReadCloser
	abs  string
	want checkpoint.StateFile
	n    int64
	crc  uint32
	err  error // sticky, once the end was checked or reading failed
}

func (c *checkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if err := c.ctx.Err(); err != nil {
		return 0, fmt.Errorf("read state file %s: %w", c.abs, err)
	}
	// Reading at most one byte past the recorded size tells "too long"
	// from "right size" without trusting a Stat.
	if rest := c.want.Size + 1 - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += int64(n)
	switch {
	case c.n > c.want.Size:
		// The byte past the end is not handed out.
		c.err = c.corrupt(fmt.Errorf("size mismatch: file is longer than the %d bytes recorded", c.want.Size))
		return n - 1, c.err
	case errors.Is(err, io.EOF):
		c.err = c.atEOF()
		return n, c.err
	case err != nil:
		c.err = fmt.Errorf("read state file %s: %w", c.abs, err)
		return n, c.err
	}
	return n, nil
}

// atEOF returns io.EOF if the file was exactly what the metadata recorded.
func (c *checkedReader) atEOF() error {
	switch {
	case c.n < c.want.Size:
		return c.corrupt(fmt.Errorf("size mismatch: file has %d bytes, %d recorded", c.n, c.want.Size))
	case c.crc != c.want.CRC32C:
		return c.corrupt(fmt.Errorf("checksum mismatch: crc32c 0x%08x, 0x%08x recorded", c.crc, c.want.CRC32C))
	}
	return io.EOF
}

func (c *checkedReader) corrupt(err error) error {
	return fmt.Errorf("state file %s: %w: %w; restore from an older checkpoint or savepoint", c.abs, ErrCorrupt, err)
}

func (c *checkedReader) Close() error { return c.r.Close() }
