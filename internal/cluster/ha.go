package cluster

import (
	"context"
)

// HA is what a JobManager under high availability needs of its
// coordination service (internal/ha implements it on etcd; app wires it
// from the high-availability.* keys). Without it (nil) a JobManager leads
// alone and keeps its job records in its --state-dir.
type HA interface {
	// Campaign blocks until this JobManager leads, then returns its term.
	Campaign(ctx context.Context, self LeaderInfo) (Leadership, error)
	// Observe sends the leader each time it changes, the current one
	// first; a zero LeaderInfo while none leads. It ends with ctx.
	Observe(ctx context.Context) <-chan LeaderInfo
	// Jobs returns the job records by name.
	Jobs(ctx context.Context) (map[string][]byte, error)
	// Checkpoints returns a job's registered checkpoints, ascending.
	Checkpoints(ctx context.Context, job string) ([]int64, error)
	// CheckpointIDBound returns the job's checkpoint id counter (0: none).
	CheckpointIDBound(ctx context.Context, job string) (int64, error)
	// StorageDir is high-availability.storageDir: where jobs keep their
	// checkpoints unless they name a state.checkpoints.dir.
	StorageDir() string
}

// LeaderInfo is what a leading JobManager publishes.
type LeaderInfo struct {
	ID          string
	RPCAddress  string
	RESTAddress string
	// Term is the leadership's fencing token; 0: no leader.
	Term int64
}

// Leadership is one term of this JobManager as leader. Every write is
// fenced: it succeeds only while this term still leads, so a deposed
// leader (paused, partitioned) can neither record a job nor complete a
// checkpoint.
type Leadership interface {
	Term() int64
	// Done is closed when the leadership is lost (the lease expired or
	// could not be renewed, or Resign).
	Done() <-chan struct{}
	Resign(ctx context.Context) error
	SaveJob(ctx context.Context, name string, record []byte) error
	DeleteJob(ctx context.Context, name string) error
	RegisterCheckpoint(ctx context.Context, job string, id int64, path string) error
	UnregisterCheckpoints(ctx context.Context, job string, ids []int64) error
	DropCheckpoints(ctx context.Context, job string) error
	ReserveCheckpointIDs(ctx context.Context, job string, upTo int64) (int64, error)
}
