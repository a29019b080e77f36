package jobmaster

import (
	"errors"
	"fmt"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/failover"
)

// coordStep steps the coordinator and performs its actions.
func (m *Machine) coordStep(ev coordinator.Event) { m.perform(m.coord.Step(ev)) }

// perform turns the coordinator's actions into the Machine's.
func (m *Machine) perform(actions []coordinator.Action) {
	for _, act := range actions {
		switch act := act.(type) {
		case coordinator.Trigger:
			m.log.Info("checkpoint triggered", "id", act.ID, "kind", act.Kind)
			m.triggered[act.ID] = true
			if m.draining {
				m.emit(TriggerCheckpoint{ID: act.ID, Timestamp: act.Timestamp, Kind: act.Kind})
				continue
			}
			m.held = append(m.held, act)
			m.releaseHeld()
		case coordinator.Persist:
			if m.draining {
				// Not started: the Reset that follows aborts it.
				continue
			}
			m.persisting++
			if m.cfg.Register {
				m.persistKind[act.ID] = act.Kind
			}
			m.emit(PersistMetadata{ID: act.ID, Kind: act.Kind, Timestamp: act.Timestamp, States: act.States})
		case coordinator.NotifyComplete:
			m.completed[act.ID] = true
			m.log.Info("checkpoint completed", "id", act.ID, "kind", act.Kind)
			held := act.Kind == checkpoint.Final && (m.anyRegionFailing() || len(m.restarts) > 0 || m.loading)
			if held {
				// A final checkpoint whose metadata write outlived the
				// suspension completed while a region restarts. Told, the
				// other regions' tasks would finish and could never ack
				// the final checkpoint the restarted region takes again;
				// so nobody is told, and that next final checkpoint's
				// notification covers this one (notifications are
				// cumulative). The restarted region restores this one.
				m.log.Info("final checkpoint completed while a region restarts: notification held back", "id", act.ID)
			} else if act.Kind == checkpoint.Final {
				m.finalDone = true
				// Every current execution acknowledged it: told now,
				// each may finish (refuseFinished).
				for _, e := range m.execs {
					if !e.state.Terminal() {
						e.covered = true
					}
				}
			}
			m.emit(NotifyComplete{ID: act.ID, Kind: act.Kind, TMs: slices.Clone(m.tms), Held: held})
			m.checkpointDone(act.ID, act.Kind, nil)
			m.emit(Retain{ID: act.ID, Sweep: m.sweep()})
		case coordinator.Abort:
			m.log.Info("checkpoint aborted", "id", act.ID, "reason", act.Reason)
			m.emit(NotifyAborted{ID: act.ID, Kind: act.Kind, Reason: act.Reason, Subsumed: act.Subsumed, Cause: act.Cause, TMs: slices.Clone(m.tms)})
			cause := fmt.Errorf("checkpoint %d aborted: %s", act.ID, act.Reason)
			if act.Subsumed {
				cause = fmt.Errorf("checkpoint %d: %w", act.ID, errSubsumed)
			}
			m.checkpointDone(act.ID, act.Kind, cause)
			m.emit(Discard{IDs: []checkpoint.ID{act.ID}, Aborted: true, Sweep: m.sweep()})
		case coordinator.Failover:
			if m.draining {
				continue
			}
			// A failure of the whole job: every region restarts.
			m.failCause = fmt.Errorf("checkpointing: %s", act.Reason)
			m.emit(Failure{Cause: m.failCause.Error()})
			m.feed(failover.GlobalFailure{Reason: m.failCause.Error(), Now: m.now})
		case coordinator.Rejected:
			m.log.Info("checkpoint request rejected", "reason", act.Reason)
		case coordinator.ProbeStorage:
			m.emit(ProbeStorage{})
		case coordinator.StorageAlert:
			m.emit(StorageAlert{act})
		case coordinator.StorageRecovered:
			m.emit(StorageRecovered{act})
		case coordinator.FailJob:
			if m.draining || m.fatal != nil {
				continue
			}
			// No restart can fix storage, and waiting longer would lose
			// output: the job fails for good, saying why.
			m.fatal = Unrecoverable(fmt.Errorf("checkpointing: %s", act.Reason))
			m.emit(Failure{Cause: m.fatal.Error()})
		}
	}
}

// sendTrigger sends a checkpoint's barrier to the live sources.
func (m *Machine) sendTrigger(t coordinator.Trigger) {
	m.emit(TriggerCheckpoint{ID: t.ID, Timestamp: t.Timestamp, Kind: t.Kind, Groups: m.groups(m.cfg.Sources, live)})
}

// sweep reports whether a Retain or Discard may sweep unreferenced
// shared files: only while no checkpoint is pending, and then barriers
// wait for its Swept (the sweep runs later, on the storage worker, and
// would delete the uploads of a checkpoint triggered meanwhile).
func (m *Machine) sweep() bool {
	if len(m.coord.Pending()) > 0 {
		return false
	}
	m.sweeping++
	return true
}

// releaseHeld sends the held barriers of checkpoints still pending, in
// order, once no sweep is in flight; a barrier at or above the reserved
// id bound waits for a reservation first: a JobManager restarted after a
// crash must never trigger an id this run used.
func (m *Machine) releaseHeld() {
	if m.reserving || m.sweeping > 0 {
		return
	}
	m.mode.releaseHeld()
}

// releaseBarriers sends the held barriers (barrier checkpoints).
func (m *Machine) releaseBarriers() {
	held := m.held
	m.held = nil
	pending := m.coord.Pending()
	for i, t := range held {
		if !slices.Contains(pending, t.ID) || m.draining {
			continue
		}
		if m.cfg.Reserve && t.ID >= m.reserved && !m.waive {
			m.held = held[i:]
			m.reserving = true
			m.emit(ReserveIDs{UpTo: t.ID + reservationStep})
			return
		}
		m.sendTrigger(t)
	}
	m.waive = false
}

// idsReserved releases the barriers that waited for a reservation. A
// failed write is logged and those checkpoints go ahead: the bound only
// matters after a crash, and then their folders are cleaned as incomplete;
// the next trigger tries again.
func (m *Machine) idsReserved(ev IDsReserved) {
	m.reserving = false
	if ev.Err != nil {
		m.log.Error("reserve checkpoint ids", "up_to", ev.UpTo, "error", ev.Err)
		m.waive = true
	} else {
		m.reserved = max(m.reserved, ev.UpTo)
	}
	m.releaseHeld()
}

// serve handles an outside request. A checkpoint request is answered at
// once with the id; a savepoint request once its checkpoint completed and
// was copied; a stop request once the job ended.
func (m *Machine) serve(req Request) {
	if m.draining {
		m.emit(Answer{Req: req.Req, Err: errEnding})
		return
	}
	m.mode.serve(req)
}

// serveCheckpoints handles an outside request with barrier checkpoints.
func (m *Machine) serveCheckpoints(req Request) {
	if req.Kind == RequestStop {
		// The stop belongs to the job, not to this attempt: an attempt
		// that fails after it is restarted and stops again (deployTo), and
		// the caller hears back only once the job ended.
		m.stops = append(m.stops, pendingStop{req: req})
		m.stopSources(nil)
		return
	}
	if len(m.coord.Pending()) >= m.maxConcurrent() {
		// As Flink, a request waits for a checkpoint to finish rather than
		// being refused because periodic checkpoints are in progress.
		m.queued = append(m.queued, req)
		return
	}
	kind := checkpoint.Periodic
	if req.Kind == RequestSavepoint {
		// A savepoint's state must be canonical: full snapshots.
		kind = checkpoint.Savepoint
	}
	acts := m.coord.Step(coordinator.TriggerRequest{Now: m.now, Kind: kind})
	r := Answer{Req: req.Req}
	for _, act := range acts {
		switch act := act.(type) {
		case coordinator.Trigger:
			r.ID = act.ID
		case coordinator.Rejected:
			r.Err = fmt.Errorf("checkpoint not triggered: %s", act.Reason)
		}
	}
	// The trigger goes out before the answer: a caller told the id can
	// then find the checkpoint in the job's history at once (the driver
	// records it there when it performs TriggerCheckpoint).
	m.perform(acts)
	if req.Kind == RequestSavepoint && r.Err == nil {
		m.savepoints[r.ID] = append(m.savepoints[r.ID], req)
	} else {
		m.emit(r)
	}
}

// maxConcurrent is the coordinator's effective limit on pending
// checkpoints.
func (m *Machine) maxConcurrent() int {
	c := m.cfg.Checkpoint
	if c.MinPause > 0 || c.MaxConcurrent < 1 {
		return 1
	}
	return c.MaxConcurrent
}

// checkpointDone answers the savepoint requests waiting for checkpoint id
// (err != nil: it failed) or has their copies made, records the final
// checkpoint for stop requests, then serves the requests queued behind
// the concurrency limit. Its copies come before the Retain that follows,
// so the checkpoint is still there to copy.
func (m *Machine) checkpointDone(id checkpoint.ID, kind checkpoint.Kind, err error) {
	waiting := m.savepoints[id]
	delete(m.savepoints, id)
	switch {
	case errors.Is(err, errSubsumed):
		// A newer checkpoint completed first: take another one for these
		// requests (a savepoint must be a checkpoint taken after it was
		// asked for; the next one is).
		m.queued = append(m.queued, waiting...)
		waiting = nil
	case kind == checkpoint.Final && err == nil:
		// Copy now, while the final checkpoint is surely retained; answer
		// when the job has ended, so "stopped" is true.
		for i := range m.stops {
			st := &m.stops[i]
			st.result = Answer{Req: st.req.Req, ID: id}
			st.done = st.req.Target == ""
			if !st.done {
				m.copying++
				m.emit(CopySavepoint{Req: st.req.Req, ID: id, Target: st.req.Target})
			}
		}
	}
	for _, req := range waiting {
		if err == nil && req.Target != "" {
			m.copying++
			m.emit(CopySavepoint{Req: req.Req, ID: id, Target: req.Target})
			continue
		}
		m.emit(Answer{Req: req.Req, ID: id, Err: err})
	}
	if m.draining {
		return
	}
	queued := m.queued
	m.queued = nil
	for _, req := range queued {
		m.serve(req)
	}
}

// savepointCopied answers a savepoint request, or completes a stop's.
func (m *Machine) savepointCopied(ev SavepointCopied) {
	m.copying--
	for i := range m.stops {
		if st := &m.stops[i]; st.req.Req == ev.Req {
			st.result = Answer{Req: ev.Req, ID: ev.ID, Path: ev.Path, Err: ev.Err}
			st.done = true
			return
		}
	}
	if ev.Err == nil {
		m.log.Info("savepoint written", "checkpoint", ev.ID, "path", ev.Path)
	}
	m.emit(Answer{Req: ev.Req, ID: ev.ID, Path: ev.Path, Err: ev.Err})
}

// failRequests answers every request still waiting when the job ends.
func (m *Machine) failRequests(err error) {
	ids := make([]checkpoint.ID, 0, len(m.savepoints))
	for id := range m.savepoints {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		for _, req := range m.savepoints[id] {
			m.emit(Answer{Req: req.Req, ID: id, Err: fmt.Errorf("checkpoint %d did not complete: %w", id, err)})
		}
	}
	m.savepoints = map[checkpoint.ID][]Request{}
	for _, req := range m.queued {
		m.emit(Answer{Req: req.Req, Err: fmt.Errorf("no checkpoint could be triggered: %w", err)})
	}
	m.queued = nil
}

// answerStops replies to every stop request: with its final checkpoint's
// result if the job finished, else with failure.
func (m *Machine) answerStops(failure error) {
	for _, st := range m.stops {
		switch {
		case failure != nil:
			m.emit(Answer{Req: st.req.Req, Err: fmt.Errorf("the job failed while stopping: %w", failure)})
		case st.done:
			m.emit(st.result)
		default:
			m.emit(Answer{Req: st.req.Req, Err: errors.New("the job ended without a final checkpoint")})
		}
	}
	m.stops = nil
}
