package runtime

import (
	"context"
	"io"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
)

// storeWriters hands tasks a StateWriter bound to one checkpoint of the
// job's storage.
type storeWriters struct{ fs *storage.FS }

func (s *storeWriters) ForCheckpoint(id checkpoint.ID) dataflow.StateWriter {
	return chkWriter{fs: s.fs, id: id}
}

// jobStorage is the job's storage as operators may use it while they
// run; nil without storage (a task built without a writer factory), and
// in a mode without job-wide checkpoints (WEAKLY_CONSISTENT): the
// shared-file registry counts references of job-wide checkpoints only,
// which is also why such modes refuse incremental snapshots.
func (s *storeWriters) jobStorage(cfg *JobConfig) dataflow.JobStorage {
	if s == nil || s.fs == nil || !cfg.snapshotsOnBarriers() {
		return nil
	}
	return s.fs
}

type chkWriter struct {
	fs *storage.FS
	id checkpoint.ID
}

func (w chkWriter) WriteFile(ctx context.Context, name string, write func(io.Writer) error) (checkpoint.StateFile, error) {
	return w.fs.WriteFile(ctx, w.id, name, write)
}
