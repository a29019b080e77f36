package storage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/vfs"
)

// WriteFile writes the state file chk-<id>/<name> through write, buffered,
// computing its size and CRC32C on the way, and syncs it. The returned
// StateFile is what a task acknowledges; its Path is relative to JobDir.
// Concurrent calls for different names are safe. On failure the partial
// file is removed (best effort) and the error names the file.
func (s *FS) WriteFile(ctx context.Context, id checkpoint.ID, name string, write func(w io.Writer) error) (checkpoint.StateFile, error) {
	rel := path.Join(chkName(id), name)
	if s.readOnly {
		return checkpoint.StateFile{}, s.errReadOnly("write state file " + rel)
	}
	if err := checkStateFileName(name); err != nil {
		return checkpoint.StateFile{}, fmt.Errorf("write state file of checkpoint %d: %w", id, err)
	}
	abs := filepath.Join(s.jobDir, filepath.FromSlash(rel))
	if err := ctx.Err(); err != nil {
		return checkpoint.StateFile{}, fmt.Errorf("write state file %s: %w", abs, err)
	}
	sf, err := s.writeFile(ctx, abs, write)
	if err != nil {
		// The file is not referenced by any metadata yet, so removing it
		// is safe; if removal fails too, Discard or Retain removes it.
		_ = s.fs.Remove(abs)
		return checkpoint.StateFile{}, fmt.Errorf("write state file %s: %w", abs, err)
	}
	sf.Path = rel
	return sf, nil
}

func (s *FS) writeFile(ctx context.Context, abs string, write func(w io.Writer) error) (checkpoint.StateFile, error) {
	// Concurrent MkdirAll calls for the same directory are fine: an
	// existing directory is success.
	if err := s.fs.MkdirAll(filepath.Dir(abs), dirPerm); err != nil {
		return checkpoint.StateFile{}, err
	}
	f, err := s.fs.Create(abs)
	if err != nil {
		return checkpoint.StateFile{}, err
	}
	hw := &hashWriter{ctx: ctx, w: f}
	bw := bufio.NewWriterSize(hw, s.bufSize)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return checkpoint.StateFile{}, err
	}
	return checkpoint.StateFile{Size: hw.n, CRC32C: hw.crc}, nil
}

// hashWriter checksums and counts exactly the bytes the file accepted, and
// stops a long write once its context is cancelled (checked per buffer, not
// per byte).
type hashWriter struct {
	ctx context.Context
	w   io.Writer
	n   int64
	crc uint32
}

func (h *hashWriter) Write(p []byte) (int, error) {
	if err := h.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := h.w.Write(p)
	h.crc = crc32.Update(h.crc, castagnoli, p[:n])
	h.n += int64(n)
	return n, err
}

// checkStateFileName keeps state files inside their checkpoint directory and
// away from the names storage itself uses (_metadata, the probe).
func checkStateFileName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("state file name %q is not a file name", name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("state file name %q contains a path separator; use a plain file name", name)
	case strings.HasPrefix(name, "_") || strings.HasPrefix(name, "."):
		return fmt.Errorf("state file name %q starts with %q, which is reserved for storage's own files", name, name[:1])
	}
	return nil
}

// WriteMetadata completes checkpoint md.ID: it encodes md, writes
// chk-<id>/_metadata.tmp, syncs it, renames it to _metadata and syncs the
// checkpoint and job directories. Until the rename the checkpoint does not
// exist; after the directory sync it survives a crash. It returns the
// absolute path of the _metadata file. Metadata is never overwritten: a
// second completion of the same id is a bug upstream and fails.
func (s *FS) WriteMetadata(ctx context.Context, md *checkpoint.Metadata) (string, error) {
	if md == nil {
		return "", errors.New("write checkpoint metadata: metadata is nil")
	}
	dir := s.chkDir(md.ID)
	final := filepath.Join(dir, metadataName)
	if s.readOnly {
		return "", s.errReadOnly("write metadata " + final)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("write metadata %s: %w", final, err)
	}
	b, err := Encode(md)
	if err != nil {
		return "", err
	}
	if _, err := s.fs.Stat(final); err == nil {
		return "", fmt.Errorf("write metadata %s: checkpoint %d is already complete; checkpoint ids must not be reused", final, md.ID)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("write metadata %s: %w", final, err)
	}
	if err := s.fs.MkdirAll(dir, dirPerm); err != nil {
		return "", fmt.Errorf("write metadata %s: %w", final, err)
	}
	tmp := filepath.Join(dir, metadataTmp)
	if err := writeSynced(s.fs, tmp, b); err != nil {
		_ = s.fs.Remove(tmp)
		return "", fmt.Errorf("write metadata %s: %w", tmp, err)
	}
	if err := s.fs.Rename(tmp, final); err != nil {
		_ = s.fs.Remove(tmp)
		return "", fmt.Errorf("write metadata %s: %w", final, err)
	}
	// The checkpoint directory's sync makes the rename and the state files'
	// entries durable; the job directory's sync makes chk-<id> itself
	// durable. Without them a power loss could keep the data but lose the
	// names. If a sync fails the caller counts the checkpoint as failed, so
	// the _metadata is taken back (best effort) rather than left to be
	// restored from after a restart.
	for _, d := range []string{dir, s.jobDir} {
		if err := s.fs.SyncDir(d); err != nil {
			_ = s.fs.Remove(final)
			return "", fmt.Errorf("write metadata %s: sync directory %s: %w", final, d, err)
		}
	}
	return final, nil
}

// writeSynced writes b to name and syncs it.
func writeSynced(fsys vfs.FS, name string, b []byte) error {
	f, err := fsys.Create(name)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
