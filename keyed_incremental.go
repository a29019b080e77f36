package weir

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/state/lsm"
)

// snapshotIncremental is the keyed operator's incremental checkpoint on
// the LSM backend: a Pebble checkpoint now, the upload of new SSTs on the
// writer goroutine.
func (o *processOp[K, T, U]) snapshotIncremental(id checkpoint.ID) (dataflow.AsyncSnapshot, error) {
	snap, err := o.lsm.IncrementalSnapshot(id)
	if err != nil {
		return nil, err
	}
	o.clock.snapshot()
	ops, err := o.kctx.ops.Snapshot()
	if err != nil {
		snap.Release()
		return nil, err
	}
	prefix := keyedFileName(o.oc.UID, o.oc.Subtask)
	uid := o.oc.UID
	rows := stateRows(o.backend, o.kctx.ops)
	return func(ctx context.Context, w dataflow.StateWriter) (checkpoint.OperatorSubtaskState, error) {
		defer snap.Release()
		sw, ok := w.(dataflow.SharedStateWriter)
		if !ok {
			return checkpoint.OperatorSubtaskState{}, fmt.Errorf("incremental checkpoint %d: the checkpoint storage has no shared area; set %s false", id, config.StateBackendIncremental)
		}
		h, err := snap.Write(ctx, sw, prefix)
		if err != nil {
			return checkpoint.OperatorSubtaskState{}, err
		}
		return checkpoint.OperatorSubtaskState{UID: uid, Incremental: h, Operator: ops, Schemas: rows}, nil
	}, nil
}

// restoreIncremental builds the LSM store from the incremental handles of
// the restored checkpoint.
func (o *processOp[K, T, U]) restoreIncremental(ctx context.Context, oc *dataflow.OperatorContext) error {
	r := oc.Restored
	if len(r.Incremental) == 0 {
		return nil
	}
	if o.lsm == nil {
		return fmt.Errorf("restore keyed state from checkpoint %d: it is an incremental checkpoint of the lsm state backend, whose files only that backend reads; set %s %s, or restore from a savepoint (canonical, readable by every backend)", r.Checkpoint, config.StateBackendType, config.BackendLSM)
	}
	srcs := make([]lsm.IncrementalSource, len(r.Incremental))
	for i, h := range r.Incremental {
		srcs[i] = lsm.IncrementalSource{Handle: h, Files: r.Files}
	}
	start := time.Now()
	st, err := o.lsm.RestoreIncremental(ctx, srcs, r.OwnShared)
	if err != nil {
		return fmt.Errorf("restore keyed state from checkpoint %d: %w", r.Checkpoint, err)
	}
	oc.Logger.Info("restored lsm store from incremental checkpoint", "checkpoint", r.Checkpoint, "stores", len(srcs), "downloaded", st.Downloaded, "reused_locally", st.Reused, "duration", time.Since(start))
	return nil
}

// NotifyCheckpointComplete lets the LSM backend reference the completed
// checkpoint's files instead of uploading them again.
func (o *processOp[K, T, U]) NotifyCheckpointComplete(_ context.Context, id checkpoint.ID) error {
	if o.lsm == nil || !o.oc.StateBackend.Incremental {
		return nil
	}
	if err := o.lsm.CheckpointComplete(id); err != nil {
		// The checkpoint is complete either way; a local copy that could
		// not be kept or removed costs disk, not correctness.
		o.oc.Logger.Warn("lsm state backend: after checkpoint completion", "checkpoint", id, "err", err)
	}
	return nil
}

// NotifyCheckpointAborted removes the aborted checkpoint's local copy.
func (o *processOp[K, T, U]) NotifyCheckpointAborted(id checkpoint.ID) error {
	if o.lsm == nil || !o.oc.StateBackend.Incremental {
		return nil
	}
	if err := o.lsm.CheckpointAborted(id); err != nil {
		o.oc.Logger.Warn("lsm state backend: remove aborted checkpoint's local copy", "checkpoint", id, "err", err)
	}
	return nil
}

// localRecoveryDir is the folder where a subtask keeps its newest
// completed checkpoint's files: per job, operator and subtask, under the
// lsm folder, so that a restarted attempt of the same subtask finds them.
func localRecoveryDir(oc *dataflow.OperatorContext) string {
	return filepath.Join(runtime.LocalRecoveryJobDir(oc.StateBackend, oc.JobName), keyedFileName(oc.UID, oc.Subtask))
}
