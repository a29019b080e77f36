package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
