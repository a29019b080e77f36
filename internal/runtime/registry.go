package runtime

import (
	"context"
	"fmt"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
)

// CheckpointRegistry is where a JobManager under high availability
// registers completed checkpoints (internal/ha on etcd). A checkpoint is
// complete only once Register returned nil; the driver restores only
// registered checkpoints.
//
// The JobMaster calls it from its storage worker, one call at a time, in
// the order of its storage actions: a checkpoint's Register after its
// metadata write, an Unregister before the checkpoint's files are deleted.
type CheckpointRegistry interface {
	// Register registers checkpoint id, whose metadata is written at path
	// (its folder as checkpointLocation gives it), in a transaction fenced
	// on the leader's term: it fails once this JobManager is no longer
	// the leader. An error fails the checkpoint; it is then discarded
	// (Unregister first, in case it registered after all).
	Register(ctx context.Context, id checkpoint.ID, path string) error
	// Registered returns the registered checkpoints, ascending.
	Registered(ctx context.Context) ([]checkpoint.ID, error)
	// Unregister removes the pointers of ids; ids not registered are
	// ignored.
	Unregister(ctx context.Context, ids []checkpoint.ID) error
}

// The crash points of checkpoint completion (JobConfig's crash hook,
// ClusterJobConfig.CrashPoint): the driver calls the hook with the name
// at each, and the cluster layer's tests kill the JobManager there
// (docs/design/fault-coverage.md, classes 3 and 4).
const (
	// CrashAfterMetadata: a checkpoint's metadata is written, durably, and
	// it is not registered yet (called on the storage worker, right after
	// the write succeeded, before the Register call).
	CrashAfterMetadata = "after-metadata"
	// CrashAfterRegister: a checkpoint was registered (Register returned
	// nil) and no TaskManager was told it completed (called on the storage
	// worker, right after Register, before the Machine hears of it).
	CrashAfterRegister = "after-register"
	// CrashMidNotify: the first TaskManager was sent a checkpoint's
	// NotifyComplete and the others not yet (called on the JobMaster's
	// loop, only when at least two TaskManagers are told).
	CrashMidNotify = "mid-notify"
)

// crash calls the crash hook, if any, at the named point.
func (jm *JobMaster) crash(name string) {
	if f := jm.cfg.crashPoint; f != nil {
		f(name)
	}
}

// register registers checkpoint id (RegisterCheckpoint, on the worker).
func (jm *JobMaster) register(id checkpoint.ID) error {
	reg := jm.cfg.registry
	if reg == nil {
		return nil
	}
	jm.registerTried[id] = true
	if err := reg.Register(context.Background(), id, jm.checkpointLocation(id)); err != nil {
		return err // the Machine names the checkpoint and the registration
	}
	jm.crash(CrashAfterRegister)
	return nil
}

// unregisterForDiscard removes the pointers of the checkpoints about to
// be discarded that this JobManager tried to register (a refused Register
// may have registered after all; ids never repeat across leaders, so no
// other id can be registered). It reports whether their files may go.
func (jm *JobMaster) unregisterForDiscard(ids []checkpoint.ID) bool {
	reg := jm.cfg.registry
	if reg == nil {
		return true
	}
	var tried []checkpoint.ID
	for _, id := range ids {
		if jm.registerTried[id] {
			tried = append(tried, id)
		}
	}
	if len(tried) == 0 {
		return true
	}
	if err := reg.Unregister(context.Background(), tried); err != nil {
		// A pointer must never point at deleted files: they are kept, and
		// a later retention removes them once their pointer is gone.
		jm.log.Error("unregister discarded checkpoints: their files are kept", "ids", tried, "err", err)
		return false
	}
	for _, id := range tried {
		delete(jm.registerTried, id)
	}
	return true
}

// retainRegistered applies retention over the registered checkpoints
// (storage.RetainRegistered): the older ones are unregistered before their
// files are removed. If the registry cannot be read or the pointers
// removed, nothing is removed now.
func (jm *JobMaster) retainRegistered() ([]checkpoint.ID, error) {
	ctx := context.Background()
	ids, err := jm.cfg.registry.Registered(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the registered checkpoints (nothing removed): %w", err)
	}
	return jm.store.RetainRegistered(jm.cfg.NumRetained, ids, func(drop []checkpoint.ID) error {
		return jm.cfg.registry.Unregister(ctx, drop)
	})
}

// loadLatestRegistered returns the newest registered checkpoint that
// verifies. A newer checkpoint with metadata that nobody registered is
// skipped, and said so once.
func (jm *JobMaster) loadLatestRegistered(ctx context.Context) (*checkpoint.Metadata, []error, error) {
	ids, err := jm.cfg.registry.Registered(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list the registered checkpoints: %w", err)
	}
	var newest checkpoint.ID
	if len(ids) > 0 {
		newest = slices.Max(ids)
	}
	if written, err := jm.store.Completed(); err == nil {
		for _, id := range written {
			if id > newest && !jm.unregisteredSaid[id] {
				jm.unregisteredSaid[id] = true
				jm.log.Warn(fmt.Sprintf("checkpoint %d has metadata but was never registered (its JobManager lost leadership or crashed before registering): not restored", id), "checkpoint", id, "path", jm.checkpointLocation(id))
			}
		}
	}
	return jm.store.LoadLatestOf(ctx, ids)
}
