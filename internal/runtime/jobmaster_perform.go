package runtime

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobmaster"
	"github.com/weirstream/weir/internal/jobstatus"
)

// perform carries out one of the Machine's actions: gateway calls and
// status updates on the loop, storage on the worker.
func (jm *JobMaster) perform(act jobmaster.Action) {
	st := jm.status
	job := jm.spec.Name
	switch act := act.(type) {
	case jobmaster.PrepareJob:
		jm.place.gateway(act.TM).PrepareJob(jm.spec, jm.desc)
	case jobmaster.Deploy:
		jm.deploy(act)
	case jobmaster.CancelExecs:
		for _, g := range act.Groups {
			jm.place.gateway(g.TM).Cancel(job, g.Execs)
		}
	case jobmaster.StopSources:
		for _, g := range act.Groups {
			jm.place.gateway(g.TM).StopSources(job, g.Execs)
		}
	case jobmaster.WeakPeers:
		u := deployment.WeakPeersUpdate{Finished: act.Finished}
		for _, p := range act.Moved {
			u.Moved = append(u.Moved, deployment.ChannelDesc{Peer: p.Exec, TM: jm.place.gateway(p.Slot.TM).ID(), DataAddress: p.Slot.Address})
		}
		for _, tm := range act.TMs {
			jm.place.gateway(tm).WeakPeers(job, u)
		}
	case jobmaster.TriggerCheckpoint:
		jm.triggeredAt[act.ID] = act.Timestamp
		st.CheckpointTriggered(act.ID, act.Kind, act.Timestamp)
		b := checkpoint.Barrier{ID: act.ID, Timestamp: act.Timestamp, Kind: act.Kind}
		for _, g := range act.Groups {
			gw := jm.place.gateway(g.TM)
			for _, x := range g.Execs {
				gw.Trigger(job, x, b)
			}
		}
	case jobmaster.NotifyComplete:
		if jm.rescaleCkpt != 0 && act.ID >= jm.rescaleCkpt {
			jm.rescaleOn(act.ID)
		}
		if jm.cfg.Weak {
			st.Weak.SnapshotsCompleted.Add(1)
		}
		st.CompletedCheckpoints.Add(1)
		st.LastCheckpointID.Store(int64(act.ID))
		if t0, ok := jm.triggeredAt[act.ID]; ok {
			d := jm.cfg.Now().Sub(t0)
			st.LastCheckpointDuration.Store(int64(d))
			st.CheckpointCompleted(act.ID, d)
		}
		if !act.Held {
			for i, tm := range act.TMs {
				if i == 1 {
					jm.crash(CrashMidNotify)
				}
				jm.place.gateway(tm).NotifyComplete(job, act.ID, act.Kind)
			}
		}
	case jobmaster.NotifyAborted:
		if act.ID == jm.rescaleCkpt {
			jm.rescaleFailed(fmt.Errorf("rescale: checkpoint %d to rescale from failed (%s), the job goes on unchanged", act.ID, act.Reason))
		}
		if jm.cfg.Weak {
			st.Weak.SnapshotsFailed.Add(1)
		}
		if !act.Subsumed {
			st.CountFailed(act.Cause)
		}
		if act.Cause == coordinator.CauseStorage {
			st.FailedStorage.Add(1)
		}
		if t0, ok := jm.triggeredAt[act.ID]; ok {
			d := jm.cfg.Now().Sub(t0)
			cause := act.Cause.String()
			st.CheckpointFailed(act.ID, d, act.Reason, cause)
		}
		for _, tm := range act.TMs {
			jm.place.gateway(tm).NotifyAborted(job, act.ID)
		}
	case jobmaster.Answer:
		req, ok := jm.requests[act.Req]
		if !ok {
			return
		}
		delete(jm.requests, act.Req)
		if req.kind == reqCheckpoint && act.Err == nil && act.ID > 0 {
			st.CheckpointAnswered(act.ID, jm.cfg.Now())
		}
		rep := triggerReply{id: act.ID, path: act.Path, err: act.Err}
		if req.kind == reqRescale {
			switch {
			case act.Err != nil:
				// The attempt goes on at its parallelism.
				jm.rescaled = nil
				rep.err = fmt.Errorf("rescale: the checkpoint to rescale from failed, the job goes on unchanged: %w", act.Err)
			default:
				// Answered once that checkpoint completed (rescaleOn).
				jm.rescaled.req, jm.rescaleCkpt = &req, act.ID
				return
			}
		}
		req.reply <- rep
	case jobmaster.Failure:
		st.SetFailure(act.Cause)
	case jobmaster.StorageAlert:
		st.StorageFailing.Store(true)
		jm.storageAlert(act)
	case jobmaster.StorageRecovered:
		st.StorageFailing.Store(false)
		jm.log.Info("checkpoint storage works again: a checkpoint completed", "storage", jm.display(jm.store.JobDir()),
			"failed_checkpoints", act.Failures, "after", act.Duration.Round(time.Millisecond))
	case jobmaster.ReleaseJob:
		for _, tm := range act.TMs {
			jm.place.gateway(tm).ReleaseJob(job)
		}
		st.SetTaskSource(nil)
	case jobmaster.JobEnded:
		jm.ended(act)
	default:
		jm.performStorage(act)
	}
}

// deploy sends one Deployment per TaskManager group.
func (jm *JobMaster) deploy(act jobmaster.Deploy) {
	jm.cfg.Faults.Release()
	var ref *deployment.RestoreRef
	if rp := act.Restore; rp != nil {
		ref = &deployment.RestoreRef{ID: rp.ID}
		if !rp.Own {
			ref.Path = rp.Path
		}
		jm.status.Restoring(rp.ID, act.Attempt, jm.cfg.Now())
	}
	exec := func(t checkpoint.TaskID) deployment.ExecutionID {
		x, _ := jm.m.Exec(t)
		return x
	}
	place := func(t checkpoint.TaskID) (deployment.ResourceID, string, int) {
		s := act.Slots[t.Subtask]
		return jm.place.gateway(s.TM).ID(), s.Address, t.Subtask
	}
	for _, g := range act.Groups {
		tasks := make([]checkpoint.TaskID, len(g.Execs))
		for i, x := range g.Execs {
			tasks[i] = x.Task
		}
		jm.place.gateway(g.TM).Deploy(deployment.Deployment{Job: jm.spec.Name, Restore: ref, Tasks: describeTasks(jm.jg, tasks, exec, place)})
	}
}

// ended waits for the storage worker to finish what the Machine asked
// (discards, the last sweep), then sets the job's final state and what
// run returns. The stop requests' answers follow, so "stopped" is true.
func (jm *JobMaster) ended(act jobmaster.JobEnded) {
	jm.worker.drain()
	st := jm.status
	now := jm.cfg.Now()
	jm.result = act.Err
	if r := jm.rescaled; r != nil {
		if jm.rescaleCancel && act.State == jobmaster.JobCanceled {
			// Ended to be rescaled: the caller of run deploys the job
			// again; its local recovery files serve that restore.
			jm.rescaleDone = true
			st.SetState(jobstatus.StateRestarting, now)
			jm.result = nil
			return
		}
		// Ended otherwise (failed for good, cancelled, its input ended)
		// before the rescale was carried out.
		jm.rescaleFailed(fmt.Errorf("rescale: the job ended %s before it was rescaled", act.State))
	}
	switch act.State {
	case jobmaster.JobCanceled:
		st.SetState(jobstatus.StateCanceled, now)
	case jobmaster.JobFailed:
		st.SetState(jobstatus.StateFailed, now)
	default:
		st.SetState(jobstatus.StateFinished, now)
		jm.removeLocalRecovery()
	}
}

// performStorage hands a storage action to the worker; its result comes
// back through the inbox.
func (jm *JobMaster) performStorage(act jobmaster.Action) {
	st := jm.status
	switch act := act.(type) {
	case jobmaster.PersistMetadata:
		md, err := metadataFor(jm.cfg.JobName, jm.jg, act.ID, act.Kind, act.Timestamp, act.States)
		if err != nil {
			jm.in.put(jmEvent{ev: jobmaster.StoreDone{ID: act.ID, Err: err}})
			return
		}
		size := jobstatus.SizesOf(act.States)
		jm.worker.do(func() {
			jm.sharedPersisting(md)
			_, err := jm.store.WriteMetadata(context.Background(), md)
			if err == nil {
				st.CheckpointPersisted(act.ID, size)
				jm.crash(CrashAfterMetadata)
			}
			jm.in.put(jmEvent{ev: jobmaster.StoreDone{ID: act.ID, Err: err}})
		})
	case jobmaster.RegisterCheckpoint:
		jm.worker.do(func() {
			err := jm.register(act.ID)
			jm.in.put(jmEvent{ev: jobmaster.Registered{ID: act.ID, Err: err}})
		})
	case jobmaster.LoadLatest:
		jm.worker.do(func() {
			rp, err := jm.latestRestorePoint(context.Background())
			var out *jobmaster.RestorePoint
			if rp != nil {
				out = &jobmaster.RestorePoint{ID: rp.md.ID, Own: true, Path: rp.path}
			}
			jm.in.put(jmEvent{ev: jobmaster.LatestLoaded{Restore: out, Err: err}})
		})
	case jobmaster.CopySavepoint:
		final := jm.requests[act.Req].kind == reqStop
		jm.worker.do(func() {
			path, err := jm.savepoint(context.Background(), act.ID, act.Target)
			if err != nil && final {
				err = fmt.Errorf("%w (the final checkpoint %s is retained)", err, jm.checkpointLocation(act.ID))
			}
			jm.in.put(jmEvent{ev: jobmaster.SavepointCopied{Req: act.Req, ID: act.ID, Path: path, Err: err}})
		})
	case jobmaster.Retain:
		jm.worker.do(func() {
			jm.retain(act.ID, act.Sweep)
			jm.swept(act.Sweep)
		})
	case jobmaster.Discard:
		for _, id := range act.IDs {
			// A restored task snapshot goes with its task's older ones
			// (TaskRestores.Older), which nothing restores any more.
			if older, ok := jm.weak.Older[id]; ok {
				delete(jm.weak.Older, id)
				act.IDs = append(slices.Clip(act.IDs), older...)
			}
		}
		jm.worker.do(func() {
			if !jm.unregisterForDiscard(act.IDs) {
				// Their pointers may remain: the files stay (and the
				// shared files they reference, kept referenced).
				jm.sharedKept(act.IDs)
				jm.swept(act.Sweep)
				return
			}
			for _, id := range act.IDs {
				if err := jm.store.Discard(id); err != nil {
					jm.log.Error("discard checkpoint", "id", id, "err", err)
				}
				if act.Aborted {
					jm.sharedAborted(id, act.Sweep)
				}
			}
			jm.swept(act.Sweep)
		})
	case jobmaster.SweepShared:
		jm.worker.do(jm.sweepShared)
	case jobmaster.ProbeStorage:
		jm.worker.do(func() {
			err := jm.store.Probe()
			jm.in.put(jmEvent{ev: jobmaster.StorageProbed{Err: err}})
		})
	case jobmaster.ReserveIDs:
		jm.worker.do(func() {
			err := jm.reserveIDs(act.UpTo)
			jm.in.put(jmEvent{ev: jobmaster.IDsReserved{UpTo: act.UpTo, Err: err}})
		})
	default:
		panic(fmt.Sprintf("jobmaster driver: unknown action %T", act))
	}
}

// swept tells the Machine that a sweep it asked for ran: barriers held
// back while it could delete their uploads go out.
func (jm *JobMaster) swept(sweep bool) {
	if sweep {
		jm.in.put(jmEvent{ev: jobmaster.Swept{}})
	}
}
