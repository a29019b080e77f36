package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
)

// jobRecord is what a JobManager keeps of a job in its state folder
// (DIR/jobs/<name>/job.json): the spec to build it again and how far it
// got. A JobManager started on the folder recovers every job whose record
// is not terminal.
type jobRecord struct {
	Spec  deployment.JobSpec `json:"spec"`
	State jobstatus.JobState `json:"state"`
	// Failure is the cause of a FAILED job.
	Failure string `json:"failure,omitempty"`
	// FirstCheckpoint is the first checkpoint id the job's first run
	// took: a recovered job restores a checkpoint at least this new
	// instead of the --from point it was submitted with.
	FirstCheckpoint int64 `json:"first_checkpoint,omitempty"`
	// Runs counts the job's starts: the submission and each recovery. A
	// run's execution attempts start at (Runs-1) × 2^20.
	Runs int `json:"runs,omitempty"`
	// ReservedCheckpoints is the bound below which the job's checkpoint ids
	// may have been used; a recovered run's ids start there.
	ReservedCheckpoints int64     `json:"reserved_checkpoints,omitempty"`
	Submitted           time.Time `json:"submitted"`
	Ended               time.Time `json:"ended,omitzero"`
}

func terminalState(s jobstatus.JobState) bool { return s.Terminal() }

// jobRecords is where a JobManager keeps its job records: its state
// folder (jobStore), or etcd under high availability (haJobStore).
type jobRecords interface {
	// save writes the record atomically: a crash leaves the old or the
	// new record, never a torn one.
	save(r jobRecord) error
	// load returns every readable record, by submission time; an
	// unreadable one is reported and skipped (the others still recover).
	load() ([]jobRecord, []error)
}

// jobStore reads and writes job records under dir/jobs.
type jobStore struct{ dir string }

var _ jobRecords = jobStore{}

func (s jobStore) path(name string) string { return filepath.Join(s.dir, "jobs", name, "job.json") }

// save writes the record atomically: a crash leaves the old or the new
// record, never a torn one.
func (s jobStore) save(r jobRecord) error {
	p := s.path(r.Spec.Name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("save job %s: %w", r.Spec.Name, err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("save job %s: %w", r.Spec.Name, err)
	}
	tmp := p + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("save job %s: %w", r.Spec.Name, err)
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("save job %s: %w", r.Spec.Name, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("save job %s: %w", r.Spec.Name, err)
	}
	if d, err := os.Open(filepath.Dir(p)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// load returns every readable record, by submission time; an unreadable
// one is reported and skipped (the others still recover).
func (s jobStore) load() ([]jobRecord, []error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, "jobs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{fmt.Errorf("read jobs in %s: %w", s.dir, err)}
	}
	var out []jobRecord
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := s.path(e.Name())
		// The job is not recovered: its checkpoints stay where they are,
		// and a submission of its name must resume them explicitly.
		const resubmit = "to forget the job; to run it on, submit it again with --from its newest chk-N folder"
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			// A crash between creating the folder and the first rename.
			errs = append(errs, fmt.Errorf("job folder %s has no job.json (a submission cut short?): remove the folder %s", filepath.Dir(p), resubmit))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: read %s: %w", e.Name(), p, err))
			continue
		}
		var r jobRecord
		if err := json.Unmarshal(b, &r); err != nil {
			errs = append(errs, fmt.Errorf("job record %s is corrupt (%v): remove the folder %s %s", p, err, filepath.Dir(p), resubmit))
			continue
		}
		if err := r.Spec.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("job record %s: %w", p, err))
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Submitted.Before(out[j].Submitted) })
	return out, errs
}
