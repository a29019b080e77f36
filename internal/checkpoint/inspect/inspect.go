package inspect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/vfs"
)

// ErrNotCheckpoint means the path given to Inspect is not a completed
// checkpoint at all: it does not exist, is neither a chk-<n> directory nor
// a _metadata file, or is a chk-<n> directory without _metadata (a
// checkpoint that never completed). The caller passed a wrong path, as
// opposed to a damaged checkpoint, which gives storage.ErrCorrupt.
var ErrNotCheckpoint = errors.New("not a completed checkpoint")

const metadataName = "_metadata"

// Inspect verifies the checkpoint at path (a chk-<n> directory or its
// _metadata file) and reports what it holds. A damaged checkpoint — bad
// metadata, a missing state file, a size or checksum mismatch, a key-group
// block this build cannot parse — gives an error wrapping
// storage.ErrCorrupt that names the file; a path that is no checkpoint one
// wrapping ErrNotCheckpoint that names the path.
func Inspect(ctx context.Context, path string) (*Report, error) {
	return InspectFS(ctx, vfs.OS{}, path)
}

// InspectFS is Inspect for a checkpoint on fsys (an s3fs.FS for one on
// S3); path is a path on fsys.
func InspectFS(ctx context.Context, fsys vfs.FS, path string) (*Report, error) {
	dir, err := locate(fsys, path)
	if err != nil {
		return nil, err
	}
	md, sfs, err := storage.LoadPath(ctx, dir, storage.WithFS(fsys))
	if err != nil {
		return nil, err
	}
	r := &Report{
		Path:         dir,
		Job:          md.JobID,
		ID:           md.ID,
		Kind:         md.Kind.String(),
		Timestamp:    md.Timestamp,
		Operators:    make([]Operator, 0, len(md.Operators)),
		ChannelState: []ChannelState{},
		SharedFiles:  []SharedFile{},
	}
	for _, op := range md.Operators {
		o, err := operator(ctx, sfs, &op, &r.ChannelState)
		if err != nil {
			return nil, fmt.Errorf("inspect checkpoint %s: %w", dir, err)
		}
		r.Operators = append(r.Operators, o)
	}
	r.SharedFiles = sharedFiles(md)
	r.Totals = totals(r.Operators, r.ChannelState, r.SharedFiles)
	return r, nil
}

// locate resolves path to an absolute chk-<n> directory that holds a
// _metadata file, or says why it is not one.
func locate(fsys vfs.FS, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", path, ErrNotCheckpoint, err)
	}
	fi, err := fsys.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: %w: no such file or directory", abs, ErrNotCheckpoint)
		}
		return "", fmt.Errorf("%s: %w", abs, err)
	}
	dir := abs
	if !fi.IsDir() {
		if filepath.Base(abs) != metadataName {
			return "", fmt.Errorf("%s: %w: pass a chk-<n> directory or its %s file", abs, ErrNotCheckpoint, metadataName)
		}
		dir = filepath.Dir(abs)
	}
	if !isChkName(filepath.Base(dir)) {
		return "", fmt.Errorf("%s: %w: not a chk-<n> directory; pass one from a job's checkpoint folder, e.g. <state-dir>/<job>/chk-7", dir, ErrNotCheckpoint)
	}
	if _, err := fsys.Stat(filepath.Join(dir, metadataName)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: %w: it has no %s file, so the checkpoint never completed", dir, ErrNotCheckpoint, metadataName)
		}
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	return dir, nil
}

// isChkName mirrors storage's reading of checkpoint directory names: only
// the canonical decimal form counts.
func isChkName(name string) bool {
	digits, ok := strings.CutPrefix(name, "chk-")
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return err == nil && n >= 0 && strconv.FormatInt(n, 10) == digits
}

// operator reports one operator, reading its keyed state and channel-state
// files from sfs.
// Channel state found is appended to chans.
func operator(ctx context.Context, sfs *storage.FS, op *checkpoint.OperatorState, chans *[]ChannelState) (Operator, error) {
	o := Operator{UID: op.UID, Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism, Subtasks: make([]Subtask, 0, len(op.Subtasks))}
	for _, st := range op.Subtasks {
		where := fmt.Sprintf("operator %q subtask %d", op.UID, st.Subtask)
		s := Subtask{Index: st.Subtask}
		if h := st.State.Keyed; h != nil {
			// ReadFile checks size and checksum again: the file is read
			// whole here anyway, and it may have changed since LoadPath.
			data, err := sfs.ReadFile(ctx, h.File)
			if err != nil {
				return Operator{}, fmt.Errorf("%s: %w", where, err)
			}
			abs := filepath.Join(sfs.JobDir(), filepath.FromSlash(h.File.Path))
			if s.Keyed, err = keyed(h, data, abs, op.MaxParallelism, op.Parallelism, st.Subtask); err != nil {
				return Operator{}, fmt.Errorf("%s: %w", where, err)
			}
		}
		if h := st.State.Incremental; h != nil {
			inc, err := incremental(ctx, sfs, h, op.MaxParallelism, op.Parallelism, st.Subtask)
			if err != nil {
				return Operator{}, fmt.Errorf("%s: %w", where, err)
			}
			s.Incremental = inc
		}
		if h := st.State.Channels; h != nil {
			cs, err := channelState(ctx, sfs, h, op.UID, st.Subtask)
			if err != nil {
				return Operator{}, fmt.Errorf("%s: %w", where, err)
			}
			*chans = append(*chans, cs)
		}
		if len(st.State.Operator) > 0 {
			ls, err := listStates(st.State.Operator, where)
			if err != nil {
				return Operator{}, err
			}
			s.OperatorState = ls
		}
		o.Subtasks = append(o.Subtasks, s)
	}
	return o, nil
}
