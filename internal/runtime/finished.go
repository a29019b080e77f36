package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/storage"
)

// The rule for a job that FINISHED, the same in a local run and on a
// cluster: once the end is recorded, RecordFinished writes the
// finished-run marker into the job's folder and discards its checkpoints,
// so nothing resumes a final checkpoint whose sources are at their end.
// A later run from scratch under the same name and folder is refused by
// CheckFinished before anything is deployed, whatever its sinks: it would
// write the whole output again, and Kafka or PostgreSQL cannot tell the
// copy from new records. StartLine tells the user where a run starts.

// openStorage opens the job's checkpoint storage (cfg.CheckpointDir,
// cfg.JobName).
func openStorage(cfg JobConfig) (*storage.FS, error) {
	var sopts []storage.Option
	if cfg.StorageFS != nil {
		sopts = append(sopts, storage.WithFS(cfg.StorageFS))
	}
	return storage.Open(cfg.CheckpointDir, cfg.JobName, sopts...)
}

// RecordFinished records that the job FINISHED: it writes the
// finished-run marker (from cfg.Status's figures and end time, or
// cfg.Now's reading when the status has none) into the job's folder,
// then removes every checkpoint and all else in that folder. Savepoints
// are kept.
//
// The marker goes first: a crash between the two leaves the marker and
// the final checkpoint (a rerun is still refused), never a folder with
// neither, which a run from scratch would take for a new job. If the
// marker cannot be written the checkpoints stay: a run started on them
// resumes the final checkpoint, whose sources are at their end, and
// commits nothing twice.
func RecordFinished(cfg JobConfig) error {
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	store, err := openStorage(cfg)
	if err != nil {
		return fmt.Errorf("record finished job %s: %w", cfg.JobName, err)
	}
	if err := store.WriteFinished(finishedRun(cfg, now())); err != nil {
		return fmt.Errorf("record finished job %s (its checkpoints are kept): %w", cfg.JobName, err)
	}
	if err := store.DiscardAll(); err != nil {
		return fmt.Errorf("discard the checkpoints of finished job %s: %w", cfg.JobName, err)
	}
	return nil
}

// finishedRun is the marker's content for cfg's run, FINISHED at now.
func finishedRun(cfg JobConfig, now time.Time) storage.FinishedRun {
	r := storage.FinishedRun{Job: cfg.JobName, Finished: now.UTC().Truncate(time.Millisecond)}
	if st := cfg.Status; st != nil {
		start, end := st.Times()
		if !start.IsZero() {
			r.Started = start.UTC().Truncate(time.Millisecond)
		}
		if !end.IsZero() {
			r.Finished = end.UTC().Truncate(time.Millisecond)
		}
		r.FinalCheckpoint = st.LastCheckpointID.Load()
		r.CompletedCheckpoints = st.CompletedCheckpoints.Load()
		r.Restarts = st.Restarts.Load()
		r.SourceRecords = st.SourceRecords.Load()
	}
	return r
}

// ErrFinishedRun is CheckFinished's refusal (errors.Is): the job's folder
// records a run that FINISHED and this run would start from scratch.
var ErrFinishedRun = errors.New("job already finished")

// finishedRunError is the refusal, naming the run and the ways forward.
type finishedRunError struct {
	path string
	run  storage.FinishedRun
}

func (e *finishedRunError) Error() string {
	return fmt.Sprintf("job %s already FINISHED: %s records its run that finished at %s (%s); "+
		"a run from scratch would write its whole output to its sinks a second time: "+
		"to run it again anyway pass --rerun (weir.WithRerunFinished() for a program's own Env), "+
		"to keep that run apart choose another --state-dir or --job-name, "+
		"or start from a checkpoint or savepoint with --from",
		e.run.Job, e.path, e.run.Finished.Format(time.RFC3339), finishedFigures(e.run))
}

func (e *finishedRunError) Is(target error) bool { return target == ErrFinishedRun }

// CheckFinished refuses a run from scratch of a job whose folder records
// a run that FINISHED (RecordFinished), naming that run and the ways
// forward. Not refused: a run with cfg.FromPath (it starts from what the
// user chose), and a run that resumes a checkpoint in the folder (one
// that --rerun started and that did not finish, or a finished run's final
// checkpoint that a crash kept; resuming it commits nothing twice). With
// cfg.Rerun it returns a note naming the run instead, for the caller to
// print or log; the marker stays until the rerun finishes and replaces
// it, so a rerun that fails before its first checkpoint leaves the job
// protected as before.
func CheckFinished(cfg JobConfig) (note string, err error) {
	if cfg.FromPath != "" {
		return "", nil
	}
	store, err := openStorage(cfg)
	if err != nil {
		return "", fmt.Errorf("job %s: look for a finished run: %w", cfg.JobName, err)
	}
	r, ok, err := store.ReadFinished()
	if err != nil {
		return "", fmt.Errorf("job %s: %w; remove that file if the run it recorded is to be forgotten", cfg.JobName, err)
	}
	if !ok {
		return "", nil
	}
	ids, err := store.Completed()
	if err != nil {
		return "", fmt.Errorf("job %s: look for checkpoints to resume: %w", cfg.JobName, err)
	}
	if len(ids) > 0 {
		return "", nil
	}
	if cfg.Rerun {
		return fmt.Sprintf("job %s: running again from scratch (--rerun) after its run that FINISHED at %s (%s), recorded in %s",
			cfg.JobName, r.Finished.Format(time.RFC3339), finishedFigures(r), store.FinishedPath()), nil
	}
	return "", &finishedRunError{path: store.FinishedPath(), run: r}
}

// finishedFigures lists a finished run's figures for a message.
func finishedFigures(r storage.FinishedRun) string {
	s := fmt.Sprintf("final checkpoint %d, %d checkpoints, %d restarts", r.FinalCheckpoint, r.CompletedCheckpoints, r.Restarts)
	if r.SourceRecords > 0 {
		s += fmt.Sprintf(", %d source records read", r.SourceRecords)
	}
	return s
}

// StartLine says in one line where a run of the job starts: the --from
// checkpoint or savepoint, the newest checkpoint of an earlier run that did
// not finish (which a run started without --from resumes; in
// WEAKLY_CONSISTENT mode each task's newest snapshot), or from scratch.
func StartLine(cfg JobConfig) (string, error) {
	if cfg.FromPath != "" {
		return fmt.Sprintf("job %s: starting from %s", cfg.JobName, cfg.FromPath), nil
	}
	store, err := openStorage(cfg)
	if err != nil {
		return "", err
	}
	ids, err := store.Completed()
	if err != nil {
		return "", err
	}
	if len(ids) == 0 {
		return fmt.Sprintf("job %s: starting from scratch (no checkpoint in %s)", cfg.JobName, store.JobDir()), nil
	}
	if cfg.Weak {
		return fmt.Sprintf("job %s: resuming each task's newest snapshot in %s (%d task snapshots, newest %d), left by an earlier run that did not finish", cfg.JobName, store.JobDir(), len(ids), ids[len(ids)-1]), nil
	}
	return fmt.Sprintf("job %s: resuming checkpoint %d in %s, left by an earlier run that did not finish", cfg.JobName, ids[len(ids)-1], store.JobDir()), nil
}
