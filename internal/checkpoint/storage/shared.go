package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/weirstream/weir/internal/checkpoint"
)

// The shared area, <job>/shared/, holds the files of incremental
// checkpoints that several checkpoints reference (SSTs). A checkpoint's
// metadata references them as "shared/<name>" state files, so verifying,
// reading and streaming them is the same as for any state file; what
// differs is their life: Discard and Retain never touch them, the
// JobManager's shared-file registry deletes them (RemoveShared) once no
// retained checkpoint references them.

// tmpSeq makes the temporary names of concurrent uploads distinct.
var tmpSeq atomic.Uint64

// WriteSharedFile writes shared/<name> through write, computing its size
// and CRC32C, syncs it and moves it into place by rename, so that a reader
// never sees a partial file under the final name, even when two concurrent
// checkpoints upload the same file. The returned StateFile's Path is
// relative to JobDir.
func (s *FS) WriteSharedFile(ctx context.Context, name string, write func(w io.Writer) error) (checkpoint.StateFile, error) {
	rel := path.Join(checkpoint.SharedDir, name)
	if s.readOnly {
		return checkpoint.StateFile{}, s.errReadOnly("write shared file " + rel)
	}
	if err := checkStateFileName(name); err != nil {
		return checkpoint.StateFile{}, fmt.Errorf("write shared file: %w", err)
	}
	dir := filepath.Join(s.jobDir, checkpoint.SharedDir)
	final := filepath.Join(dir, name)
	// A leading dot: never a shared file's name (checkStateFileName), so a
	// listing tells leftovers of a crashed upload from shared files.
	tmp := filepath.Join(dir, "."+name+"."+strconv.FormatUint(tmpSeq.Add(1), 10)+".tmp")
	if err := ctx.Err(); err != nil {
		return checkpoint.StateFile{}, fmt.Errorf("write shared file %s: %w", final, err)
	}
	sf, err := s.writeFile(ctx, tmp, write)
	if err == nil {
		err = s.fs.Rename(tmp, final)
	}
	if err != nil {
		_ = s.fs.Remove(tmp)
		return checkpoint.StateFile{}, fmt.Errorf("write shared file %s: %w", final, err)
	}
	sf.Path = rel
	return sf, nil
}

// ListShared returns the names in the shared area, sorted (with the
// leftovers of uploads that never finished, whose names start with a dot).
// No shared area yet is an empty list.
func (s *FS) ListShared() ([]string, error) {
	dir := filepath.Join(s.jobDir, checkpoint.SharedDir)
	ents, err := s.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list shared files in %s: %w", dir, err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// RemoveShared deletes shared files by name; a missing file is not an
// error. It returns the first failure, after trying every name.
func (s *FS) RemoveShared(names []string) error {
	if s.readOnly {
		return s.errReadOnly("remove shared files")
	}
	var first error
	for _, n := range names {
		if n == "" || n == "." || n == ".." || filepath.Base(n) != n {
			continue
		}
		p := filepath.Join(s.jobDir, checkpoint.SharedDir, n)
		if err := s.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = fmt.Errorf("remove shared file %s: %w", p, err)
		}
	}
	return first
}

// hasIncremental reports whether any subtask of md has an incremental
// keyed state handle.
func hasIncremental(md *checkpoint.Metadata) bool {
	for _, op := range md.Operators {
		for _, st := range op.Subtasks {
			if st.State.Incremental != nil {
				return true
			}
		}
	}
	return false
}

// verifyIncremental checks the files of every incremental handle of md.
// seen caches the outcome per shared file, which many checkpoints share.
func (s *FS) verifyIncremental(ctx context.Context, md *checkpoint.Metadata, seen map[string]error) error {
	for _, op := range md.Operators {
		for _, st := range op.Subtasks {
			h := st.State.Incremental
			if h == nil {
				continue
			}
			for _, f := range h.Files() {
				err, done := seen[f.Path]
				if !done {
					err = s.checkOne(ctx, f)
					if path.Dir(f.Path) == checkpoint.SharedDir {
						seen[f.Path] = err
					}
				}
				if err != nil {
					return fmt.Errorf("operator %q subtask %d: state file %s: %w", op.UID, st.Subtask, f.Path, err)
				}
			}
		}
	}
	return nil
}

func (s *FS) checkOne(ctx context.Context, f checkpoint.StateFile) error {
	abs, err := s.statePath(f)
	if err != nil {
		return err
	}
	return s.checkStateFile(ctx, abs, f, nil)
}

// validateIncremental checks what JSON cannot about an incremental handle.
func validateIncremental(h *checkpoint.IncrementalKeyedStateHandle) error {
	if h.KeyGroupStart < 0 || h.KeyGroupEnd <= h.KeyGroupStart {
		return fmt.Errorf("key-group range [%d,%d) is empty or negative", h.KeyGroupStart, h.KeyGroupEnd)
	}
	locals := map[string]bool{}
	for _, r := range h.Shared {
		if err := checkStateFileName(r.Name); err != nil {
			return fmt.Errorf("shared file: %w", err)
		}
		if err := checkStateFileName(r.Local); err != nil || locals[r.Local] {
			return fmt.Errorf("shared file %s: local name %q is not a file name or is listed twice", r.Name, r.Local)
		}
		locals[r.Local] = true
		if r.Size < 0 {
			return fmt.Errorf("shared file %s has negative size %d", r.Name, r.Size)
		}
	}
	for _, p := range h.Private {
		if err := checkStateFileName(p.Local); err != nil || locals[p.Local] {
			return fmt.Errorf("private file %s: local name %q is not a file name or is listed twice", p.File.Path, p.Local)
		}
		locals[p.Local] = true
		if p.File.Size < 0 {
			return fmt.Errorf("private file %s has negative size %d", p.File.Path, p.File.Size)
		}
	}
	if t := h.Timers; t != nil {
		for _, kg := range t.KeyGroups {
			if kg.Offset < 0 || kg.Length < 0 || kg.Offset > t.File.Size-kg.Length {
				return fmt.Errorf("timers of key group %d at [%d,+%d) lie outside file %s of %d bytes", kg.KeyGroup, kg.Offset, kg.Length, t.File.Path, t.File.Size)
			}
		}
	}
	return nil
}

// ReadMetadata decodes chk-<id>/_metadata without checking the files it
// references (the JobManager rebuilds its shared-file registry from it;
// LoadLatest verifies before a restore).
func (s *FS) ReadMetadata(ctx context.Context, id checkpoint.ID) (*checkpoint.Metadata, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := filepath.Join(s.chkDir(id), metadataName)
	b, err := s.readAll(p)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	md, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return md, nil
}
