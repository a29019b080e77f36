package runtime

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/barrier"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobmaster"
	"github.com/weirstream/weir/internal/network"
)

// checkpointing is a task's side of checkpoints: the barrier handler that
// decides when to snapshot, where snapshots are written, the asynchronous
// snapshot goroutines, and how far checkpoints completed. Touched by the
// task goroutine only (asyncWG excepted).
type checkpointing struct {
	handler barrier.Handler // nil for sources
	store   StateWriterFactory
	asyncWG sync.WaitGroup // the asynchronous snapshot goroutines

	// final is the final checkpoint the task snapshotted and that was not
	// aborted: the task finishes on its completion, and on no other
	// checkpoint's (jobmaster.TaskFinal).
	final         jobmaster.TaskFinal
	completedUpTo checkpoint.ID
	// finished: the final checkpoint completed, the task's loop ends.
	finished bool
}

// newBarrierHandler is the barrier handler of a consuming task with n
// input channels, for the job's checkpointing mode. A task whose head
// asks for aligned barriers (dataflow.Node.AlignedBarriers) aligns in an
// unaligned job too; its producers send it in-band barriers.
func newBarrierHandler(cfg *JobConfig, n int, aligned bool) barrier.Handler {
	switch {
	case cfg.AtLeastOnce, !cfg.snapshotsOnBarriers():
		// (A mode without barriers needs only the tracker's view of
		// end of partition.)
		return barrier.NewAtLeastOnce(n)
	case cfg.Unaligned && !aligned:
		return barrier.NewUnaligned(n, cfg.AlignedTimeout)
	default:
		return barrier.NewAligned(n)
	}
}

// notifyComplete handles the completion of checkpoint id, of kind if
// known: operators commit what it covers, and the task finishes if it was
// the task's final checkpoint. Only a final checkpoint finishes it: a task
// that snapshotted final checkpoint F, aborted because another region
// failed, takes part in the periodic checkpoints while that region reads
// its input again and must still be there to take the next final one.
func (t *Task) notifyComplete(ctx context.Context, id checkpoint.ID, kind checkpoint.Kind, known bool) error {
	if id <= t.ckpt.completedUpTo {
		return nil
	}
	t.ckpt.completedUpTo = id
	if err := t.chain.notifyComplete(ctx, id); err != nil {
		return err
	}
	if err := t.rec.Completed(id); err != nil {
		return err
	}
	if t.ckpt.final.Completed(id, kind, known) {
		t.ckpt.finished = true
	}
	return nil
}

// notifyAborted handles the abort of checkpoint id. An aborted final
// checkpoint is forgotten: the task takes part in the next one.
func (t *Task) notifyAborted(ctx context.Context, id checkpoint.ID) error {
	t.ckpt.final.Aborted(id)
	t.rec.Aborted(id)
	if t.ckpt.handler != nil {
		if err := t.perform(ctx, nil, t.ckpt.handler.Step(barrier.AbortRequested{ID: id})); err != nil {
			return err
		}
	}
	return t.chain.notifyAborted(id)
}

// snapshot takes the task's part of checkpoint b: the synchronous part of
// every operator in chain order, then the barrier goes downstream, then the
// asynchronous parts run on their own goroutine and acknowledge. An
// unaligned snapshot also starts recording channel state (t.ua.rec, filled by
// the barrier handler's recording actions); its goroutine acknowledges once
// the recording is complete, with the handle on the head operator's state.
func (t *Task) snapshot(ctx context.Context, b checkpoint.Barrier, unaligned bool) error {
	if err := t.faults.Hit(faults.SnapshotSync); err != nil {
		return fmt.Errorf("checkpoint %d synchronous snapshot: %w", b.ID, err)
	}
	start := t.now()
	modePart, err := t.rec.Snapshot(ctx, b.ID)
	if err != nil {
		return fmt.Errorf("snapshot %d: %w", b.ID, err)
	}
	asyncs, err := t.chain.snapshotSync(ctx, b)
	if err != nil {
		return err
	}
	// A priority barrier overtakes what the consumers have queued; sources
	// send one in pure unaligned mode, any task once it snapshotted
	// unaligned. Final checkpoints and savepoints are always aligned.
	priority := unaligned || t.ua.priorityTriggers && t.chain.source != nil && b.Kind == checkpoint.Periodic
	for k, w := range t.chain.writers {
		if !t.rec.SendsBarriers() {
			break
		}
		var err error
		if priority && !t.ua.alignedOutput(k) {
			err = w.BroadcastPriority(network.Buffer{Kind: network.Barrier, Barrier: b})
		} else {
			err = w.Broadcast(ctx, network.Buffer{Kind: network.Barrier, Barrier: b})
		}
		if err != nil {
			return fmt.Errorf("checkpoint %d: forward barrier: %w", b.ID, err)
		}
	}
	t.ckpt.final.Snapshotted(b.ID, b.Kind)
	syncTime := t.now().Sub(start)
	t.metrics.syncSnapshot(syncTime)
	metrics := t.snapshotMetrics(b, unaligned)
	metrics.SyncNanos = int64(syncTime)
	sw := t.ckpt.store.ForCheckpoint(b.ID)
	var rec *channelRecorder
	if unaligned {
		if t.ua.rec != nil {
			// The handler aborts a pending checkpoint before it snapshots a
			// newer one; a recorder left over means that order broke.
			return fmt.Errorf("checkpoint %d: unaligned snapshot while checkpoint %d still records channel state", b.ID, t.ua.rec.id)
		}
		rec = newChannelRecorder(ctx, b.ID, t.ua.chans, t.ua.maxChannelState, t.faults, sw, channelStateFileName(t.chain.ocs[0].UID, t.ID.Subtask), &t.ckpt.asyncWG)
		if t.metrics.job != nil {
			rec.remoteBytes = &t.metrics.job.RecordedRemoteChannelStateBytes
		}
		t.ua.rec = rec
	}
	t.ckpt.asyncWG.Add(1)
	go func() {
		defer t.ckpt.asyncWG.Done()
		asyncStart := t.now()
		st, err := t.runAsync(ctx, b.ID, asyncs, sw)
		if err == nil && rec != nil {
			err = t.attachChannelState(ctx, rec, &st)
		}
		if err == nil && modePart != nil {
			err = modePart.Finish(ctx, sw, &st)
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return // cancelled: the job is failing over anyway
		case errors.Is(err, errRecorderAborted):
			return // the abort declined the checkpoint already
		case errors.Is(err, faults.ErrInjected) || errors.Is(err, ErrUserPanic):
			// A simulated crash, or a bug in user code: the task fails.
			t.mail.put(mail{kind: mailAsyncFailed, err: fmt.Errorf("checkpoint %d asynchronous snapshot: %w", b.ID, err)})
			return
		default:
			// Writing failed (disk full, storage unreachable): only this
			// checkpoint fails, as in Flink; the coordinator's tolerable
			// failure count decides whether the job fails over.
			t.logger.Warn("declining checkpoint: asynchronous snapshot failed", "checkpoint", b.ID, "err", err)
			t.gw.Decline(t.ID, b.ID, fmt.Sprintf("task %s#%d: asynchronous snapshot: %v", t.Name, t.ID.Subtask, err), storage.IsStorageFailure(err))
			return
		}
		// (An unaligned snapshot's metrics were completed before its
		// recorder's result was published.)
		metrics.AsyncNanos = int64(t.now().Sub(asyncStart))
		st.Metrics = *metrics
		t.gw.Acknowledge(t.ID, b.ID, st)
	}()
	return nil
}

func (t *Task) runAsync(ctx context.Context, id checkpoint.ID, asyncs []dataflow.AsyncSnapshot, sw dataflow.StateWriter) (st checkpoint.TaskState, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrUserPanic, r, debug.Stack())
		}
	}()
	st.Task = t.ID
	for i, a := range asyncs {
		if a == nil {
			continue
		}
		os, err := a(ctx, sw)
		if err != nil {
			// The remaining parts still run, on a cancelled context, so
			// that each releases its copy-on-write snapshot; left alone,
			// they would make every later write copy its key group.
			dead, cancel := context.WithCancel(ctx)
			cancel()
			for _, rest := range asyncs[i+1:] {
				if rest != nil {
					_, _ = rest(dead, sw)
				}
			}
			return st, fmt.Errorf("operator %q: %w", t.chain.ocs[i].Name, err)
		}
		if os.UID == "" {
			os.UID = t.chain.ocs[i].UID
		}
		st.Operators = append(st.Operators, os)
	}
	if err := t.faults.Hit(faults.SnapshotAsync); err != nil {
		return st, err
	}
	return st, nil
}
