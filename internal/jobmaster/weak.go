package jobmaster

import (
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/weak"
)

// WEAKLY_CONSISTENT (Config.Weak): no barriers and no global rollback.
// weak.Snapshots decides when each task snapshots and which snapshot each
// task restores; the Machine turns its decisions into the actions of
// every mode, so the driver performs them as it does for barriers:
//
//	weak.Trigger  → TriggerCheckpoint{ID, Kind, Groups: [the task's execution]}
//	weak.Persist  → PersistMetadata{ID, States: [that task's state]}
//	weak.Complete → NotifyComplete{ID, Groups: [the task's execution]}, Discard{its previous}
//	weak.Abort    → NotifyAborted{ID, Groups: [the task's execution]}, Discard{ID}
//
// A failed snapshot fails that task's only: it is never counted towards
// execution.checkpointing.tolerable-failed-checkpoints and never causes a
// failover. With Config.Register a written snapshot is registered before
// it completes, as a checkpoint is (register.go).

// weakStep steps the snapshots and performs their actions; it returns
// them for a caller that answers with an id.
func (m *Machine) weakStep(ev weak.Event) []weak.Action {
	acts := m.snaps.Step(ev)
	for _, act := range acts {
		switch act := act.(type) {
		case weak.Trigger:
			m.triggered[act.ID] = true
			m.weakHeld = append(m.weakHeld, act)
			m.releaseHeld()
		case weak.Persist:
			m.persisting++
			if m.cfg.Register {
				m.persistKind[act.ID] = act.Kind
			}
			m.emit(PersistMetadata{ID: act.ID, Kind: act.Kind, Timestamp: act.Timestamp, States: []checkpoint.TaskState{act.State}})
		case weak.Complete:
			m.completed[act.ID] = true
			m.log.Info("task snapshot completed", "id", act.ID, "kind", act.Kind, "task", act.Task)
			g := m.taskGroup(act.Task)
			m.emit(NotifyComplete{ID: act.ID, Kind: act.Kind, TMs: tmsOf(g), Groups: g})
			if act.Discard != 0 {
				// The task restores only its newest snapshot.
				m.emit(Discard{IDs: []checkpoint.ID{act.Discard}})
			}
		case weak.Abort:
			m.log.Info("task snapshot failed", "id", act.ID, "task", act.Task, "reason", act.Reason)
			g := m.taskGroup(act.Task)
			m.emit(NotifyAborted{ID: act.ID, Kind: act.Kind, Reason: act.Reason, Cause: act.Cause, TMs: tmsOf(g), Groups: g})
			m.emit(Discard{IDs: []checkpoint.ID{act.ID}, Aborted: true})
		}
	}
	return acts
}

// releaseWeak sends the held snapshot triggers still in flight and not
// yet acknowledged, in order; one at or above the reserved id bound waits
// for a reservation, as a barrier does (releaseHeld).
func (m *Machine) releaseWeak() {
	held := m.weakHeld
	m.weakHeld = nil
	for i, t := range held {
		if id, acked, ok := m.snaps.InFlight(t.Task); !ok || id != t.ID || acked || m.draining {
			continue // aborted meanwhile (its task stopped, or it timed out)
		}
		if m.cfg.Reserve && t.ID >= m.reserved && !m.waive {
			m.weakHeld = held[i:]
			m.reserving = true
			m.emit(ReserveIDs{UpTo: t.ID + reservationStep})
			return
		}
		m.log.Info("task snapshot triggered", "id", t.ID, "kind", t.Kind, "task", t.Task)
		g := m.groups([]checkpoint.TaskID{t.Task}, func(e *execution) bool { return e.state == ExecRunning })
		m.emit(TriggerCheckpoint{ID: t.ID, Timestamp: t.Timestamp, Kind: t.Kind, Groups: g})
	}
	m.waive = false
}

// taskGroup is the fan-out to task's live execution: empty, not nil, if
// it stopped, so that the driver sees a weak notification as one.
func (m *Machine) taskGroup(task checkpoint.TaskID) []Group {
	if g := m.groups([]checkpoint.TaskID{task}, live); g != nil {
		return g
	}
	return []Group{}
}

// tmsOf returns the TaskManagers of groups, in order.
func tmsOf(groups []Group) []TM {
	var out []TM
	for _, g := range groups {
		if !slices.Contains(out, g.TM) {
			out = append(out, g.TM)
		}
	}
	return out
}

// WeakSnapshots returns how many task snapshots completed and failed
// (Config.Weak; zeros otherwise). A failed one is declined, timed out,
// not written, or abandoned because its task stopped.
func (m *Machine) WeakSnapshots() (completed, failed int) {
	if m.snaps == nil {
		return 0, 0
	}
	return m.snaps.Counts()
}

// LatestSnapshot returns task's newest completed snapshot (Config.Weak):
// the point it restarts from; 0 if it has none (it restarts from
// Config.Initial).
func (m *Machine) LatestSnapshot(task checkpoint.TaskID) checkpoint.ID {
	if m.snaps == nil {
		return 0
	}
	return m.snaps.Latest(task)
}
