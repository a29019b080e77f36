package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
)

// LoadLatest returns the newest completed checkpoint that verifies: its
// _metadata decodes and belongs to its directory, and every state file it
// references exists with the recorded size and CRC32C. Newer checkpoints that
// fail are skipped and reported in the returned slice, newest first, each
// naming the checkpoint's path and the defect. With no completed checkpoint
// at all it returns ErrNoCheckpoint; when some exist but none verifies, an
// error that wraps ErrCorrupt and lists every one of them.
func (s *FS) LoadLatest(ctx context.Context) (*checkpoint.Metadata, []error, error) {
	ids, err := s.Completed()
	if err != nil {
		return nil, nil, fmt.Errorf("load latest checkpoint: %w", err)
	}
	return s.LoadLatestOf(ctx, ids)
}

// LoadLatestOf is LoadLatest among ids (ascending): the checkpoints a
// JobManager under high availability registered. A _metadata file alone
// does not make a checkpoint complete there, and an id whose _metadata is
// missing is skipped and reported as one that does not verify. With ids
// empty it returns ErrNoCheckpoint.
func (s *FS) LoadLatestOf(ctx context.Context, ids []checkpoint.ID) (*checkpoint.Metadata, []error, error) {
	if len(ids) == 0 {
		return nil, nil, fmt.Errorf("load latest checkpoint from %s: %w", s.jobDir, ErrNoCheckpoint)
	}
	var skipped []error
	// Shared files are verified once, whichever checkpoints reference
	// them: a corrupt one fails every checkpoint that uses it, and the
	// newest one that does not is restored.
	seen := map[string]error{}
	for i := len(ids) - 1; i >= 0; i-- {
		md, err := s.loadShared(ctx, ids[i], seen)
		if err == nil {
			return md, skipped, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, skipped, fmt.Errorf("load latest checkpoint from %s: %w", s.jobDir, ctxErr)
		}
		skipped = append(skipped, err)
	}
	return nil, skipped, fmt.Errorf("load latest checkpoint from %s: none of the %d completed checkpoints verifies; restore an older checkpoint with --from, or start without state in a new state folder: %w", s.jobDir, len(ids), errors.Join(skipped...))
}

// load reads and verifies checkpoint id. Its error names the checkpoint
// directory, so it can be reported as is.
func (s *FS) load(ctx context.Context, id checkpoint.ID) (*checkpoint.Metadata, error) {
	return s.loadShared(ctx, id, map[string]error{})
}

func (s *FS) loadShared(ctx context.Context, id checkpoint.ID, seen map[string]error) (*checkpoint.Metadata, error) {
	dir := s.chkDir(id)
	md, err := s.verify(ctx, id, seen)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	return md, nil
}

// verify decodes chk-<id>/_metadata and checks every state file it
// references, shared files included (their outcomes cached in seen).
func (s *FS) verify(ctx context.Context, id checkpoint.ID, seen map[string]error) (*checkpoint.Metadata, error) {
	b, err := s.readAll(filepath.Join(s.chkDir(id), metadataName))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", metadataName, err)
	}
	md, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", metadataName, err)
	}
	if md.ID != id {
		return nil, fmt.Errorf("%s: %w: metadata is of checkpoint %d, not %d; it was copied into the wrong directory", metadataName, ErrCorrupt, md.ID, id)
	}
	for _, f := range stateFiles(md) {
		abs, err := s.statePath(*f)
		if err != nil {
			return nil, fmt.Errorf("state file %s: %w", f.Path, err)
		}
		if err := s.checkStateFile(ctx, abs, *f, nil); err != nil {
			return nil, fmt.Errorf("state file %s: %w", f.Path, err)
		}
	}
	if err := s.verifyIncremental(ctx, md, seen); err != nil {
		return nil, err
	}
	return md, nil
}

// stateFiles lists the files a checkpoint references — keyed state,
// channel state, a WEAKLY_CONSISTENT task's stored output logs and
// transaction blobs — in
// metadata order, as pointers into md so that a copy (Savepoint) can
// rewrite them in place.
func stateFiles(md *checkpoint.Metadata) []*checkpoint.StateFile {
	var out []*checkpoint.StateFile
	for i := range md.Operators {
		for j := range md.Operators[i].Subtasks {
			st := &md.Operators[i].Subtasks[j].State
			if k := st.Keyed; k != nil {
				out = append(out, &k.File)
			}
			if c := st.Channels; c != nil {
				out = append(out, &c.File)
			}
			if w := st.Weak; w != nil && w.Logs != nil {
				out = append(out, w.Logs)
			}
			// Blobs in the shared area too: a savepoint copies them into
			// its folder, self-contained.
			for k := range st.Blobs {
				out = append(out, &st.Blobs[k])
			}
		}
	}
	return out
}

// readAll reads a whole (small) file through the storage's vfs.
func (s *FS) readAll(name string) ([]byte, error) {
	f, err := s.fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// LoadPath loads the checkpoint at path — a chk-<n> directory or its
// _metadata file, as given to --from — and verifies it like LoadLatest. It
// also returns a read-only FS rooted at the checkpoint's job directory, for
// reading its state files with ReadFile; its writing methods fail.
func LoadPath(ctx context.Context, path string, opts ...Option) (*checkpoint.Metadata, *FS, error) {
	s, id, _, err := openPath(path, opts)
	if err != nil {
		return nil, nil, err
	}
	md, err := s.load(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("load %w", err)
	}
	return md, s, nil
}

// ReadMetadata reads the checkpoint at path like LoadPath but does not
// verify its state files: a TaskManager restoring a checkpoint its
// JobManager verified reads only _metadata (every state file is
// CRC-checked when it is read anyway).
func ReadMetadata(ctx context.Context, path string, opts ...Option) (*checkpoint.Metadata, *FS, error) {
	s, id, dir, err := openPath(path, opts)
	if err != nil {
		return nil, nil, err
	}
	md, err := s.ReadMetadata(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("read checkpoint %s: %w", dir, err)
	}
	return md, s, nil
}

// openPath resolves a --from path to a read-only FS over its job
// directory and the completed checkpoint's id and directory.
func openPath(path string, opts []Option) (*FS, checkpoint.ID, string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, 0, "", fmt.Errorf("load checkpoint %s: %w", path, err)
	}
	o := buildOptions(opts)
	fi, err := o.fs.Stat(abs)
	if err != nil {
		return nil, 0, "", fmt.Errorf("load checkpoint %s: %w; pass a chk-<n> directory or its _metadata file", abs, err)
	}
	dir := abs
	if !fi.IsDir() {
		if filepath.Base(abs) != metadataName {
			return nil, 0, "", fmt.Errorf("load checkpoint %s: not a chk-<n> directory or a %s file", abs, metadataName)
		}
		dir = filepath.Dir(abs)
	}
	id, ok := parseChkName(filepath.Base(dir))
	if !ok {
		// A savepoint folder holds exactly one chk-<n>: accept the folder.
		if inner, found := savepointInner(o.fs, dir); found {
			dir = inner
			id, ok = parseChkName(filepath.Base(dir))
		}
	}
	if !ok {
		return nil, 0, "", fmt.Errorf("load checkpoint %s: directory %s is not named chk-<n>; state file paths are resolved relative to its parent, so keep the checkpoint inside its job directory", abs, strings.TrimSuffix(dir, string(filepath.Separator)))
	}
	s := &FS{fs: o.fs, jobDir: filepath.Dir(dir), bufSize: o.bufSize, readOnly: true}
	complete, err := s.hasMetadata(id)
	if err != nil {
		return nil, 0, "", fmt.Errorf("load checkpoint %s: %w", dir, err)
	}
	if !complete {
		return nil, 0, "", fmt.Errorf("load checkpoint %s: no %s file, so the checkpoint never completed: %w", dir, metadataName, ErrNoCheckpoint)
	}
	return s, id, dir, nil
}
