package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// The marker of a run that FINISHED: <job dir>/_finished.json, written
// when the job reached FINISHED (every task finished, the final checkpoint
// completed and its output committed), before the job's checkpoints are
// discarded (DiscardAll keeps it). A new run of the job from scratch finds
// it and refuses (runtime.CheckFinished): the sinks already hold that
// run's whole output, and Kafka or PostgreSQL cannot tell a second copy
// from new records. The format is documented in docs/guarantees.md
// ("Running a job again"); testdata/finished-v1.golden is version 1 as
// written, which a test reads back.
const (
	finishedName = "_finished.json"
	finishedTmp  = "_finished.json.tmp"
)

// FinishedRunVersion is the version of the marker this build writes. It
// reads this version and older ones; a newer one is refused, naming it,
// rather than taken for a marker whose fields it might misread.
const FinishedRunVersion = 1

// FinishedRun is the record of a run of a job that FINISHED, as
// persisted in its marker (JSON, one object).
type FinishedRun struct {
	// Version is FinishedRunVersion when written.
	Version int `json:"version"`
	// Job is the job's name (its folder and, in a cluster, its id).
	Job string `json:"job"`
	// Started and Finished are when the run started (zero when unknown)
	// and when it reached FINISHED, in UTC.
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished"`
	// FinalCheckpoint is the id of the run's last completed checkpoint,
	// whose completion committed the last of its output; 0 when the run
	// completed none (a job without two-phase-commit sinks and with
	// checkpointing off).
	FinalCheckpoint int64 `json:"final_checkpoint"`
	// CompletedCheckpoints counts the run's completed checkpoints;
	// Restarts its restarts.
	CompletedCheckpoints int64 `json:"completed_checkpoints"`
	Restarts             int64 `json:"restarts"`
	// SourceRecords counts the records its sources emitted, replays
	// included (what the run read, not a count of committed records,
	// which weir does not keep per sink); absent where the process that
	// writes the marker does not count them (a cluster's JobManager).
	SourceRecords int64 `json:"source_records,omitempty"`
}

// EncodeFinishedRun returns the marker's bytes for r at
// FinishedRunVersion (r.Version is set).
func EncodeFinishedRun(r FinishedRun) ([]byte, error) {
	r.Version = FinishedRunVersion
	if r.Job == "" {
		return nil, errors.New("encode finished-run marker: job name is empty")
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode finished-run marker of job %s: %w", r.Job, err)
	}
	return append(b, '\n'), nil
}

// DecodeFinishedRun parses a marker. Bytes that are not a marker, or a
// version newer than this build's, are ErrCorrupt: the caller names the
// file, and the user decides (remove it, or use a newer weir).
func DecodeFinishedRun(b []byte) (FinishedRun, error) {
	var r FinishedRun
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return FinishedRun{}, fmt.Errorf("%w: finished-run marker is not JSON: %v", ErrCorrupt, err)
	}
	switch {
	case r.Version < 1:
		return FinishedRun{}, fmt.Errorf("%w: finished-run marker has no version", ErrCorrupt)
	case r.Version > FinishedRunVersion:
		return FinishedRun{}, fmt.Errorf("%w: finished-run marker has version %d, newer than this weir's %d: read it with the weir that wrote it", ErrCorrupt, r.Version, FinishedRunVersion)
	case r.Job == "":
		return FinishedRun{}, fmt.Errorf("%w: finished-run marker names no job", ErrCorrupt)
	case r.Finished.IsZero():
		return FinishedRun{}, fmt.Errorf("%w: finished-run marker of job %s has no finish time", ErrCorrupt, r.Job)
	}
	return r, nil
}

// FinishedPath is the marker's path: <job dir>/_finished.json.
func (s *FS) FinishedPath() string { return filepath.Join(s.jobDir, finishedName) }

// WriteFinished writes the marker of a run that FINISHED, atomically
// (a temporary file, synced, renamed over any older marker, the folder
// synced): a crash leaves the old marker or the new one, never half of
// one.
func (s *FS) WriteFinished(r FinishedRun) error {
	final := s.FinishedPath()
	if s.readOnly {
		return s.errReadOnly("write " + final)
	}
	b, err := EncodeFinishedRun(r)
	if err != nil {
		return err
	}
	if err := s.fs.MkdirAll(s.jobDir, dirPerm); err != nil {
		return fmt.Errorf("write %s: %w", final, err)
	}
	tmp := filepath.Join(s.jobDir, finishedTmp)
	if err := writeSynced(s.fs, tmp, b); err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := s.fs.Rename(tmp, final); err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("write %s: %w", final, err)
	}
	if err := s.fs.SyncDir(s.jobDir); err != nil {
		return fmt.Errorf("write %s: sync directory %s: %w", final, s.jobDir, err)
	}
	return nil
}

// ReadFinished returns the marker of a run that FINISHED, or ok false
// when the job's folder holds none. A marker that does not decode is an
// error wrapping ErrCorrupt that names the file.
func (s *FS) ReadFinished() (r FinishedRun, ok bool, err error) {
	p := s.FinishedPath()
	b, err := s.readAll(p)
	if errors.Is(err, fs.ErrNotExist) {
		return FinishedRun{}, false, nil
	}
	if err != nil {
		return FinishedRun{}, false, fmt.Errorf("read %s: %w", p, err)
	}
	r, err = DecodeFinishedRun(b)
	if err != nil {
		return FinishedRun{}, false, fmt.Errorf("read %s: %w", p, err)
	}
	return r, true, nil
}
