package runtime

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/registry"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/keygroup"
)

// Incremental checkpoints: the JobMaster's side. The hooks below are
// called from jobmanager.go and, on the storage worker, from the storage
// actions of jobmaster_perform.go, one line each:
//
//	Execute, after CleanIncomplete     jm.initShared    rebuild the registry, delete orphans
//	PersistMetadata                    jm.sharedPersisting(md)
//	Retain                             jm.retain(id, sweep) register, retain, delete unreferenced
//	Discard of an aborted checkpoint   jm.sharedAborted(id, sweep)
//	SweepShared (the job's end)        jm.sweepShared() nothing in flight: delete orphans
//
// The Machine decides sweep: only while no checkpoint is pending. Before
// the loop runs initShared owns sharedFiles; afterwards only the worker.
//
// and, on the task side, task.go's snapshot calls snapshotOperator.

// sharedFiles is the JobManager's view of the job's shared area.
type sharedFiles struct {
	reg *registry.Registry
	// persisting holds the metadata of checkpoints being completed, until
	// their NotifyComplete registers them.
	persisting map[checkpoint.ID]*checkpoint.Metadata
	// dirty: a checkpoint failed since the last sweep, so the shared area
	// may hold its uploads.
	dirty bool
}

// initShared rebuilds the registry from every completed checkpoint's
// metadata (a checkpoint whose metadata does not decode holds nothing a
// restore could use) and deletes the files none of them references.
func (jm *JobMaster) initShared(ctx context.Context) error {
	jm.shared = sharedFiles{reg: registry.New(), persisting: map[checkpoint.ID]*checkpoint.Metadata{}, dirty: true}
	ids, err := jm.store.Completed()
	if err != nil {
		return fmt.Errorf("shared checkpoint files: %w", err)
	}
	for _, id := range ids {
		md, err := jm.store.ReadMetadata(ctx, id)
		if err != nil {
			jm.log.Warn("shared checkpoint files: unreadable metadata; its files count as unreferenced", "checkpoint", id, "err", err)
			continue
		}
		jm.shared.reg.Register(id, sharedNames(md))
	}
	jm.sweepShared()
	return nil
}

func sharedNames(md *checkpoint.Metadata) []string {
	refs := md.SharedRefs()
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.Name
	}
	return names
}

// sweepShared deletes shared files no registered checkpoint references,
// once no task runs (start-up, the job's end).
// Only while no checkpoint is in flight (see registry.Orphans).
func (jm *JobMaster) sweepShared() { jm.sweepSharedLive(false) }

// sweepSharedLive is sweepShared; with live (tasks run) it spares the
// transaction blobs of checkpoints newer than the newest completed one:
// a task may still hold their transaction pending and record them in its
// next checkpoint (checkpoint.ParseBlobName says why). Sparing leaves the
// area dirty, so that a later sweep deletes them.
func (jm *JobMaster) sweepSharedLive(live bool) {
	if !jm.shared.dirty {
		return
	}
	listed, err := jm.store.ListShared()
	if err != nil {
		jm.log.Error("shared checkpoint files: list", "err", err)
		return
	}
	orphans := jm.shared.reg.Orphans(listed)
	spared := false
	if live {
		newest := checkpoint.ID(0)
		if ids := jm.shared.reg.Checkpoints(); len(ids) > 0 {
			newest = ids[len(ids)-1]
		}
		orphans = slices.DeleteFunc(orphans, func(n string) bool {
			id, ok := checkpoint.ParseBlobName(n)
			spared = spared || ok && id > newest
			return ok && id > newest
		})
	}
	if len(orphans) > 0 {
		jm.log.Info("deleting shared checkpoint files no checkpoint references", "files", len(orphans))
		if err := jm.store.RemoveShared(orphans); err != nil {
			jm.log.Error("shared checkpoint files: delete orphans", "err", err)
			return
		}
	}
	jm.shared.dirty = spared
}

func (jm *JobMaster) sharedPersisting(md *checkpoint.Metadata) {
	jm.shared.persisting[md.ID] = md
}

// retain registers completed checkpoint id, applies retention and deletes
// the shared files only the removed checkpoints referenced.
func (jm *JobMaster) retain(id checkpoint.ID, sweep bool) {
	if md, ok := jm.shared.persisting[id]; ok {
		delete(jm.shared.persisting, id)
		jm.shared.reg.Register(id, sharedNames(md))
	}
	var removed []checkpoint.ID
	var err error
	if jm.cfg.registry != nil {
		removed, err = jm.retainRegistered()
	} else {
		removed, err = jm.store.Retain(jm.cfg.NumRetained)
	}
	if err != nil {
		jm.log.Error("checkpoint retention", "err", err)
	}
	var free []string
	for _, r := range removed {
		free = append(free, jm.shared.reg.Release(r)...)
	}
	if err := jm.store.RemoveShared(free); err != nil {
		jm.log.Error("shared checkpoint files: delete", "err", err)
	}
	if sweep {
		jm.sweepSharedLive(true)
	}
}

// sharedKept keeps the shared files of checkpoints whose discard was
// put off (their pointers could not be removed): they stay referenced
// until a later retention removes them.
func (jm *JobMaster) sharedKept(ids []checkpoint.ID) {
	for _, id := range ids {
		if md, ok := jm.shared.persisting[id]; ok {
			delete(jm.shared.persisting, id)
			jm.shared.reg.Register(id, sharedNames(md))
		}
	}
}

// sharedAborted forgets an aborted checkpoint; its uploads are deleted by
// the next sweep, once nothing is in flight.
func (jm *JobMaster) sharedAborted(id checkpoint.ID, sweep bool) {
	delete(jm.shared.persisting, id)
	jm.shared.dirty = true
	if sweep {
		jm.sweepSharedLive(true)
	}
}

func (w chkWriter) WriteSharedFile(ctx context.Context, name string, write func(io.Writer) error) (checkpoint.StateFile, error) {
	return w.fs.WriteSharedFile(ctx, name, write)
}

func snapshotOperator(ctx context.Context, op dataflow.Operator, b checkpoint.Barrier) (dataflow.AsyncSnapshot, error) {
	if k, ok := op.(dataflow.KindSnapshotter); ok {
		return k.SnapshotStateKind(ctx, b.ID, b.Timestamp, b.Kind)
	}
	return op.SnapshotState(ctx, b.ID, b.Timestamp)
}

// incrementalFor returns the incremental handles of the old subtasks whose
// key groups overlap kgs.
func (rp *restorePoint) incrementalFor(subs []checkpoint.SubtaskStateEntry, kgs keygroup.Range) ([]*checkpoint.IncrementalKeyedStateHandle, dataflow.FileSource, bool) {
	var out []*checkpoint.IncrementalKeyedStateHandle
	for _, s := range subs {
		h := s.State.Incremental
		if h == nil || h.KeyGroupEnd <= kgs.Start || h.KeyGroupStart >= kgs.End {
			continue
		}
		out = append(out, h)
	}
	if len(out) == 0 {
		return nil, nil, false
	}
	return out, rp.fs, rp.own
}
