package runtime

import (
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint/storage"
)

// The rule for a job that FINISHED, the same in a local run and on a
// cluster: its checkpoints are discarded (DiscardCheckpoints, once the end
// is recorded), so running it again starts from scratch instead of
// resuming a final checkpoint whose sources are at their end. StartLine
// tells the user which it is at every start.

// openStorage opens the job's checkpoint storage (cfg.CheckpointDir,
// cfg.JobName).
func openStorage(cfg JobConfig) (*storage.FS, error) {
	var sopts []storage.Option
	if cfg.StorageFS != nil {
		sopts = append(sopts, storage.WithFS(cfg.StorageFS))
	}
	return storage.Open(cfg.CheckpointDir, cfg.JobName, sopts...)
}

// DiscardCheckpoints removes every checkpoint of a job that FINISHED and
// its folder. Savepoints are kept.
func DiscardCheckpoints(cfg JobConfig) error {
	store, err := openStorage(cfg)
	if err != nil {
		return fmt.Errorf("discard the checkpoints of finished job %s: %w", cfg.JobName, err)
	}
	return store.DiscardAll()
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
