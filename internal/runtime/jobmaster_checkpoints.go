package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/failover"
)

// serve handles a request from outside the job (REST, CLI). A checkpoint
// request is answered at once with the id; a savepoint request once its
// checkpoint completed and was copied; a stop request once the final
// checkpoint completed (and was copied, with a target).
func (jm *JobMaster) serve(req triggerRequest) {
	if req.kind == reqStop {
		if req.target != "" {
			// Refuse before stopping anything: a stop whose savepoint
			// cannot be written must not end the job.
			if err := checkWritable(req.target); err != nil {
				req.reply <- triggerReply{err: fmt.Errorf("savepoint target %s: %w", req.target, err)}
				return
			}
		}
		// The stop belongs to the job, not to this attempt: an attempt
		// that fails after it is restarted and stops again (see
		// restartDue), and the caller hears back only once the job ended.
		jm.stops = append(jm.stops, pendingStop{req: req})
		jm.stopSources(nil)
		return
	}
	if len(jm.coord.Pending()) >= jm.maxConcurrent() {
		// As Flink, a request waits for a checkpoint to finish rather than
		// being refused because periodic checkpoints are in progress.
		jm.queued = append(jm.queued, req)
		return
	}
	acts := jm.coord.Step(coordinator.TriggerRequest{Now: jm.cfg.Now(), Kind: checkpointKindOf(req)})
	var r triggerReply
	for _, act := range acts {
		switch act := act.(type) {
		case coordinator.Trigger:
			r.id = act.ID
		case coordinator.Rejected:
			r.err = fmt.Errorf("checkpoint not triggered: %s", act.Reason)
		}
	}
	if req.kind == reqSavepoint && r.err == nil {
		jm.savepoints[r.id] = append(jm.savepoints[r.id], req)
	} else {
		req.reply <- r
	}
	jm.perform(acts)
}

// maxConcurrent is the coordinator's effective limit on pending
// checkpoints.
func (jm *JobMaster) maxConcurrent() int {
	c := jm.cfg.Checkpoint
	if c.MinPause > 0 || c.MaxConcurrent < 1 {
		return 1
	}
	return c.MaxConcurrent
}

// checkpointDone answers the savepoint and stop requests waiting for
// checkpoint id (err != nil: it failed), then serves the requests queued
// behind the concurrency limit. It runs before retention, so the checkpoint
// is still there to copy.
func (jm *JobMaster) checkpointDone(id checkpoint.ID, kind checkpoint.Kind, err error) {
	defer func() {
		if jm.draining {
			return
		}
		queued := jm.queued
		jm.queued = nil
		for _, req := range queued {
			jm.serve(req)
		}
	}()
	waiting := jm.savepoints[id]
	delete(jm.savepoints, id)
	if errors.Is(err, errSubsumed) {
		// A newer checkpoint completed first: take another one for these
		// requests (a savepoint must be a checkpoint taken after it was
		// asked for; the next one is).
		jm.queued = append(jm.queued, waiting...)
		return
	}
	if kind == checkpoint.Final && err == nil {
		// Copy now, while the final checkpoint is surely retained; answer
		// when the job has ended (JobMaster.result), so "stopped" is true.
		for i := range jm.stops {
			st := &jm.stops[i]
			st.result = triggerReply{id: id}
			if st.req.target != "" {
				st.result.path, st.result.err = jm.savepoint(context.Background(), id, st.req.target)
				if st.result.err != nil {
					st.result.err = fmt.Errorf("%w (the final checkpoint %s is retained)", st.result.err, jm.checkpointLocation(id))
				}
			}
			st.done = true
		}
	}
	for _, req := range waiting {
		r := triggerReply{id: id, err: err}
		if err == nil && req.target != "" {
			r.path, r.err = jm.savepoint(context.Background(), id, req.target)
			if r.err == nil {
				jm.log.Info("savepoint written", "checkpoint", id, "path", r.path)
			}
		}
		req.reply <- r
	}
}

// failRequests answers every request still waiting when the attempt ends.
func (jm *JobMaster) failRequests(err error) {
	for id, reqs := range jm.savepoints {
		for _, req := range reqs {
			req.reply <- triggerReply{id: id, err: fmt.Errorf("checkpoint %d did not complete: %w", id, err)}
		}
	}
	jm.savepoints = nil
	for _, req := range jm.queued {
		req.reply <- triggerReply{err: fmt.Errorf("no checkpoint could be triggered: %w", err)}
	}
	jm.queued = nil
}

// pendingStop is a stop request of the job and, once a final checkpoint
// completed, its answer.
type pendingStop struct {
	req    triggerRequest
	result triggerReply
	done   bool
}

// errSubsumed marks a checkpoint aborted because a newer one completed.
var errSubsumed = errors.New("subsumed")

// checkWritable creates dir if needed and proves it writable.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".weir-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// perform carries out the coordinator's actions.
func (jm *JobMaster) perform(actions []coordinator.Action) {
	st := jm.cfg.Status
	for _, act := range actions {
		switch act := act.(type) {
		case coordinator.Trigger:
			jm.reserve(act.ID)
			jm.log.Info("checkpoint triggered", "id", act.ID, "kind", act.Kind)
			jm.triggered[act.ID] = act.Timestamp
			st.checkpointTriggered(act.ID, act.Kind, act.Timestamp)
			if jm.draining {
				continue
			}
			b := checkpoint.Barrier{ID: act.ID, Timestamp: act.Timestamp, Kind: act.Kind}
			for _, t := range jm.sources {
				if e := jm.execs[t]; !e.state.Terminal() {
					e.tm.Trigger(jm.spec.Name, ExecutionID{Task: t, Attempt: e.attempt}, b)
				}
			}
		case coordinator.Persist:
			if jm.draining {
				// Not started: the Reset that follows aborts it.
				continue
			}
			md := metadataFor(jm.cfg.JobName, jm.jg, act.ID, act.Kind, act.Timestamp, act.States)
			jm.sharedPersisting(md)
			size := sizesOf(act.States)
			jm.persisting++
			go func() {
				_, err := jm.store.WriteMetadata(context.Background(), md)
				if err == nil {
					st.checkpointPersisted(act.ID, size)
				}
				jm.in.put(jmEvent{kind: evPersisted, id: act.ID, err: err})
			}()
		case coordinator.NotifyComplete:
			jm.completed[act.ID] = true
			jm.log.Info("checkpoint completed", "id", act.ID, "kind", act.Kind)
			st.CompletedCheckpoints.Add(1)
			st.LastCheckpointID.Store(int64(act.ID))
			if t0, ok := jm.triggered[act.ID]; ok {
				d := jm.cfg.Now().Sub(t0)
				st.LastCheckpointDuration.Store(int64(d))
				st.checkpointCompleted(act.ID, d)
			}
			if act.Kind == checkpoint.Final && (jm.anyRegionFailing() || len(jm.restarts) > 0) {
				// A final checkpoint whose metadata write outlived the
				// suspension completed while a region restarts. Told, the
				// other regions' tasks would finish and could never ack
				// the final checkpoint the restarted region takes again;
				// so nobody is told, and that next final checkpoint's
				// notification covers this one (notifications are
				// cumulative). The restarted region restores this one.
				jm.log.Info("final checkpoint completed while a region restarts: notification held back", "id", act.ID)
			} else {
				if act.Kind == checkpoint.Final {
					jm.finalDone = true
				}
				for _, tm := range jm.tms {
					tm.NotifyComplete(jm.spec.Name, act.ID)
				}
			}
			jm.checkpointDone(act.ID, act.Kind, nil)
			jm.retain(act.ID)
		case coordinator.Abort:
			if !act.Subsumed {
				st.FailedCheckpoints.Add(1)
			}
			jm.log.Info("checkpoint aborted", "id", act.ID, "reason", act.Reason)
			if t0, ok := jm.triggered[act.ID]; ok {
				d := jm.cfg.Now().Sub(t0)
				st.updateCheckpoint(act.ID, func(c *CheckpointStats) { c.Status, c.Duration, c.FailureReason = CheckpointFailed, d, act.Reason })
			}
			for _, tm := range jm.tms {
				tm.NotifyAborted(jm.spec.Name, act.ID)
			}
			cause := fmt.Errorf("checkpoint %d aborted: %s", act.ID, act.Reason)
			if act.Subsumed {
				cause = fmt.Errorf("checkpoint %d: %w", act.ID, errSubsumed)
			}
			jm.checkpointDone(act.ID, act.Kind, cause)
			if err := jm.store.Discard(act.ID); err != nil {
				jm.log.Error("discard aborted checkpoint", "id", act.ID, "err", err)
			}
			jm.sharedAborted(act.ID)
		case coordinator.Failover:
			if jm.draining {
				continue
			}
			// A failure of the whole job: every region restarts.
			jm.failCause = fmt.Errorf("checkpointing: %s", act.Reason)
			jm.cfg.Status.setFailure(jm.failCause.Error())
			jm.feed(failover.GlobalFailure{Reason: jm.failCause.Error(), Now: jm.cfg.Now()})
		case coordinator.Rejected:
			jm.log.Info("checkpoint request rejected", "reason", act.Reason)
		}
	}
}

// reservationStep is how many checkpoint ids one reservation covers.
const reservationStep = 100

// reserve makes sure the persisted bound on checkpoint ids is above id
// before checkpoint id is triggered, so that a JobManager restarted after
// a crash never triggers an id this run used (design: checkpoint-ids).
// A failed write is logged and the checkpoint goes ahead: the bound only
// matters after a crash, and then the checkpoint's folder is cleaned as
// incomplete.
func (jm *JobMaster) reserve(id checkpoint.ID) {
	if jm.reserveIDs == nil || id < jm.reserved {
		return
	}
	upTo := id + reservationStep
	if err := jm.reserveIDs(upTo); err != nil {
		jm.log.Error("reserve checkpoint ids", "up_to", upTo, "error", err)
		return
	}
	jm.reserved = upTo
}
