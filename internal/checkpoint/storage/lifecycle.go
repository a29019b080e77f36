package storage

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
)

// chkEntry is one chk-<n> directory found in the job directory.
type chkEntry struct {
	id       checkpoint.ID
	complete bool // has a _metadata file (not necessarily a valid one)
}

// list returns the job's checkpoint directories, ascending by id. Other
// entries (the probe, stray files, foreign names) are ignored.
func (s *FS) list() ([]chkEntry, error) {
	ents, err := s.fs.ReadDir(s.jobDir)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints in %s: %w", s.jobDir, err)
	}
	var out []chkEntry
	for _, e := range ents {
		id, ok := parseChkName(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		complete, err := s.hasMetadata(id)
		if err != nil {
			return nil, fmt.Errorf("list checkpoints in %s: %w", s.jobDir, err)
		}
		out = append(out, chkEntry{id: id, complete: complete})
	}
	slices.SortFunc(out, func(a, b chkEntry) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}

// hasMetadata reports whether chk-<id>/_metadata exists as a regular file.
func (s *FS) hasMetadata(id checkpoint.ID) (bool, error) {
	fi, err := s.fs.Stat(filepath.Join(s.chkDir(id), metadataName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	}
	return fi.Mode().IsRegular(), nil
}

// Completed returns the ids of the checkpoints that have a _metadata file,
// ascending. It does not verify them; LoadLatest does.
func (s *FS) Completed() ([]checkpoint.ID, error) {
	ents, err := s.list()
	if err != nil {
		return nil, err
	}
	var ids []checkpoint.ID
	for _, e := range ents {
		if e.complete {
			ids = append(ids, e.id)
		}
	}
	return ids, nil
}

// Discard removes checkpoint id's directory and everything in it; a missing
// directory is not an error. The _metadata goes first and that removal is
// synced, so a crash half-way through never leaves a "completed" checkpoint
// whose state files are partly gone.
func (s *FS) Discard(id checkpoint.ID) error {
	dir := s.chkDir(id)
	if s.readOnly {
		return s.errReadOnly("discard " + dir)
	}
	err := s.fs.Remove(filepath.Join(dir, metadataName))
	switch {
	case err == nil:
		if err := s.fs.SyncDir(dir); err != nil {
			return fmt.Errorf("discard checkpoint %s: %w", dir, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("discard checkpoint %s: %w", dir, err)
	}
	if err := s.fs.RemoveAll(dir); err != nil {
		return fmt.Errorf("discard checkpoint %s: %w", dir, err)
	}
	return nil
}

// Retain keeps the newest n completed checkpoints and removes the older
// completed ones, together with incomplete directories older than the newest
// completed checkpoint (aborted or subsumed attempts). Incomplete directories
// newer than it are left alone: they may be checkpoints in flight. It
// returns the removed ids, ascending; on error, those removed before it.
func (s *FS) Retain(n int) ([]checkpoint.ID, error) {
	if s.readOnly {
		return nil, s.errReadOnly("retain checkpoints")
	}
	if n < 1 {
		return nil, fmt.Errorf("retain %d checkpoints: must keep at least 1 (state.checkpoints.num-retained)", n)
	}
	ents, err := s.list()
	if err != nil {
		return nil, err
	}
	var completed []checkpoint.ID
	for _, e := range ents {
		if e.complete {
			completed = append(completed, e.id)
		}
	}
	if len(completed) == 0 {
		return nil, nil
	}
	newest := completed[len(completed)-1]
	keep := make(map[checkpoint.ID]bool, n)
	for _, id := range completed[max(0, len(completed)-n):] {
		keep[id] = true
	}
	var removed []checkpoint.ID
	for _, e := range ents {
		if keep[e.id] || (!e.complete && e.id > newest) {
			continue
		}
		if err := s.Discard(e.id); err != nil {
			return removed, fmt.Errorf("retain %d checkpoints: %w", n, err)
		}
		removed = append(removed, e.id)
	}
	return removed, nil
}

// RetainRegistered is Retain for a JobManager under high availability,
// where a checkpoint is complete only once registered: registered are the
// registered ids, ascending, and a _metadata file alone completes nothing.
// It keeps the newest n registered checkpoints and removes the other
// directories older than the newest registered one: older registered
// checkpoints, metadata nobody registered (left by a JobManager that lost
// leadership or crashed before registering) and aborted attempts.
// Directories newer than the newest registered one are left alone: they
// may be checkpoints in flight, written and not yet registered.
//
// A pointer must never point at deleted files: unregister is called with
// the registered ids to remove before anything is deleted, and if it fails
// nothing is (the files stay until a later retention succeeds). It returns
// the removed ids, ascending; on error, those removed before it.
func (s *FS) RetainRegistered(n int, registered []checkpoint.ID, unregister func([]checkpoint.ID) error) ([]checkpoint.ID, error) {
	if s.readOnly {
		return nil, s.errReadOnly("retain checkpoints")
	}
	if n < 1 {
		return nil, fmt.Errorf("retain %d checkpoints: must keep at least 1 (state.checkpoints.num-retained)", n)
	}
	if len(registered) == 0 {
		return nil, nil
	}
	ents, err := s.list()
	if err != nil {
		return nil, err
	}
	newest := slices.Max(registered)
	keep := make(map[checkpoint.ID]bool, n)
	for _, id := range registered[max(0, len(registered)-n):] {
		keep[id] = true
	}
	var drop []checkpoint.ID
	for _, id := range registered {
		if !keep[id] {
			drop = append(drop, id)
		}
	}
	if len(drop) > 0 {
		if err := unregister(drop); err != nil {
			return nil, fmt.Errorf("retain %d checkpoints: unregister %v (their files are kept): %w", n, drop, err)
		}
	}
	var removed []checkpoint.ID
	for _, e := range ents {
		if keep[e.id] || e.id > newest {
			continue
		}
		if err := s.Discard(e.id); err != nil {
			return removed, fmt.Errorf("retain %d checkpoints: %w", n, err)
		}
		removed = append(removed, e.id)
	}
	return removed, nil
}

// CleanIncomplete removes every checkpoint directory without a _metadata
// file. Call it on start-up, before the first checkpoint is triggered: at
// that point an incomplete directory can only be a crash's leftover.
func (s *FS) CleanIncomplete() error {
	if s.readOnly {
		return s.errReadOnly("clean incomplete checkpoints")
	}
	ents, err := s.list()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.complete {
			continue
		}
		if err := s.Discard(e.id); err != nil {
			return fmt.Errorf("clean incomplete checkpoints: %w", err)
		}
	}
	return nil
}
