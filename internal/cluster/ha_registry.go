package cluster

import (
	"context"

	"github.com/weirstream/weir/internal/checkpoint"
)

// haRegistry registers one job's completed checkpoints in HA, fenced by
// the leadership: the JobMaster counts a checkpoint complete (and lets
// sinks commit it) only once Register succeeded, and restores only
// registered checkpoints.
type haRegistry struct {
	ha  HA
	l   Leadership
	job string
}

// Every call is bounded by haStoreTimeout: etcd calls wait while etcd is
// unreachable, and the JobMaster's storage worker must not hang on one (a
// refused or timed-out registration fails its checkpoint; the leadership
// is lost by then anyway).

func (r haRegistry) Register(ctx context.Context, id checkpoint.ID, path string) error {
	ctx, cancel := context.WithTimeout(ctx, haStoreTimeout)
	defer cancel()
	return r.l.RegisterCheckpoint(ctx, r.job, int64(id), path)
}

func (r haRegistry) Registered(ctx context.Context) ([]checkpoint.ID, error) {
	ctx, cancel := context.WithTimeout(ctx, haStoreTimeout)
	defer cancel()
	ids, err := r.ha.Checkpoints(ctx, r.job)
	if err != nil {
		return nil, err
	}
	out := make([]checkpoint.ID, len(ids))
	for i, id := range ids {
		out[i] = checkpoint.ID(id)
	}
	return out, nil
}

func (r haRegistry) Unregister(ctx context.Context, ids []checkpoint.ID) error {
	ctx, cancel := context.WithTimeout(ctx, haStoreTimeout)
	defer cancel()
	raw := make([]int64, len(ids))
	for i, id := range ids {
		raw[i] = int64(id)
	}
	return r.l.UnregisterCheckpoints(ctx, r.job, raw)
}
