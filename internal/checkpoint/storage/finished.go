package storage

import (
	"fmt"
	"path/filepath"
)

// DiscardAll removes every checkpoint of the job and then the job's
// folder, all but the finished-run marker (WriteFinished) when there is
// one: what is left of a job that FINISHED, whose checkpoints nothing
// may resume (Flink discards them too). Savepoints live in folders of
// their own and are not touched.
//
// Checkpoints go oldest first, each _metadata before its files (Discard),
// so a crash half-way leaves the newest checkpoints, never an older one
// without the newer: a run started on what is left resumes the final
// checkpoint, whose sources are at their end, and commits nothing twice.
func (s *FS) DiscardAll() error {
	if s.readOnly {
		return s.errReadOnly("discard the checkpoints of " + s.jobDir)
	}
	ents, err := s.list()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := s.Discard(e.id); err != nil {
			return fmt.Errorf("discard the finished job's checkpoints: %w", err)
		}
	}
	// What remains is the shared area of incremental checkpoints, which
	// only the removed checkpoints referenced, and the finished-run
	// marker, which stays: it is what refuses a rerun from scratch.
	left, err := s.fs.ReadDir(s.jobDir)
	if err != nil {
		return fmt.Errorf("discard the finished job's folder %s: %w", s.jobDir, err)
	}
	kept := false
	for _, e := range left {
		if e.Name() == finishedName {
			kept = true
			continue
		}
		if err := s.fs.RemoveAll(filepath.Join(s.jobDir, e.Name())); err != nil {
			return fmt.Errorf("discard the finished job's folder %s: %w", s.jobDir, err)
		}
	}
	if !kept {
		if err := s.fs.RemoveAll(s.jobDir); err != nil {
			return fmt.Errorf("discard the finished job's folder %s: %w", s.jobDir, err)
		}
	}
	return nil
}
