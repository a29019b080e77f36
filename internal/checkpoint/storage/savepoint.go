package storage

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/vfs"
)

// SavepointPrefix starts the name of the folder a savepoint is written to.
const SavepointPrefix = "savepoint-"

// Savepoint copies completed checkpoint id into a new folder under
// targetDir that the user owns: <targetDir>/savepoint-<job>-<id>/chk-<id>/,
// with every state file verified on the way and the metadata rewritten
// (kind Savepoint) and written last, atomically. State file paths in the
// metadata are relative to the savepoint folder, so the folder can be moved
// or copied as a unit; retention never touches it. It returns the savepoint
// folder, which LoadPath accepts.
func (s *FS) Savepoint(ctx context.Context, id checkpoint.ID, targetDir string) (string, error) {
	md, err := s.load(ctx, id)
	if err != nil {
		return "", fmt.Errorf("savepoint of checkpoint %d: %w", id, err)
	}
	if hasIncremental(md) {
		// A savepoint is self-contained and canonical; an incremental
		// checkpoint's files live in the job's shared area, in the LSM
		// store's own format. The runtime takes savepoints as canonical
		// checkpoints (kind Savepoint) for this reason.
		return "", fmt.Errorf("savepoint of checkpoint %d: it is an incremental checkpoint whose state lies in the job's shared area; a savepoint must be canonical: trigger a savepoint (the job then takes a canonical checkpoint), or copy the whole job folder", id)
	}
	abs, err := filepath.Abs(targetDir)
	if err != nil {
		return "", fmt.Errorf("savepoint target %s: %w", targetDir, err)
	}
	dir := filepath.Join(abs, fmt.Sprintf("%s%s-%d", SavepointPrefix, filepath.Base(s.jobDir), id))
	if _, err := s.fs.Stat(dir); err == nil {
		return "", fmt.Errorf("savepoint target %s already exists; a savepoint is never overwritten", dir)
	}
	sp := &FS{fs: s.fs, jobDir: dir, bufSize: s.bufSize}
	if err := sp.probe(); err != nil {
		return "", fmt.Errorf("savepoint target %s is not writable: %w; choose another --target or fix its permissions", abs, err)
	}
	// Each file is streamed (state can be larger than memory) through the
	// size and checksum check of the source; WriteFile computes the copy's
	// checksum, which must come out equal.
	copyFile := func(f *checkpoint.StateFile) error {
		abs, err := s.statePath(*f)
		if err != nil {
			return err
		}
		nf, err := sp.WriteFile(ctx, id, filepath.Base(f.Path), func(w io.Writer) error {
			if err := s.checkStateFile(ctx, abs, *f, w); err != nil {
				return fmt.Errorf("state file %s: %w", abs, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if nf.Size != f.Size || nf.CRC32C != f.CRC32C {
			return fmt.Errorf("copy of %s: %d bytes crc32c 0x%08x, source %d bytes crc32c 0x%08x", abs, nf.Size, nf.CRC32C, f.Size, f.CRC32C)
		}
		*f = nf
		return nil
	}
	// A savepoint that could not be completed leaves nothing behind.
	fail := func(err error) (string, error) {
		if rerr := s.fs.RemoveAll(dir); rerr != nil {
			err = fmt.Errorf("%w (removing the partial savepoint %s also failed: %v)", err, dir, rerr)
		}
		return "", err
	}
	for _, f := range stateFiles(md) {
		if err := copyFile(f); err != nil {
			return fail(fmt.Errorf("savepoint of checkpoint %d into %s: %w", id, dir, err))
		}
	}
	md.Kind = checkpoint.Savepoint
	if _, err := sp.WriteMetadata(ctx, md); err != nil {
		return fail(fmt.Errorf("savepoint of checkpoint %d into %s: %w", id, dir, err))
	}
	return dir, nil
}

// savepointInner returns the single chk-<n> folder inside a savepoint
// folder.
func savepointInner(fsys vfs.FS, dir string) (string, bool) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return "", false
	}
	var found string
	for _, e := range entries {
		if _, ok := parseChkName(e.Name()); ok && e.IsDir() {
			n := e.Name()
			if found != "" {
				return "", false
			}
			found = filepath.Join(dir, n)
		}
	}
	return found, found != ""
}
