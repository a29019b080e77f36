package jobmaster

import (
	"slices"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
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

// taskMode is the snapshotMode of WEAKLY_CONSISTENT.
type taskMode struct {
	m     *Machine
	snaps *weak.Snapshots
	// held are triggers waiting for an id reservation or a sweep.
	held []weak.Trigger
}

func newTaskMode(m *Machine) *taskMode {
	cfg := m.cfg
	return &taskMode{m: m, snaps: weak.NewSnapshots(weak.Config{Interval: cfg.Checkpoint.Interval, Timeout: cfg.Checkpoint.Timeout, FirstID: cfg.FirstOwn, Latest: cfg.WeakLatest}, cfg.Tasks)}
}

// coordinatorConfig keeps the coordinator from triggering: it stays
// suspended, and the tasks' own snapshots replace its checkpoints.
func (w *taskMode) coordinatorConfig(c coordinator.Config) coordinator.Config {
	c.Interval = 0
	return c
}

func (w *taskMode) ack(ev Ack) {
	if !w.m.draining {
		w.step(weak.Ack{Task: ev.Exec.Task, ID: ev.ID, State: ev.State, Now: w.m.now})
	}
}

func (w *taskMode) decline(ev Decline) {
	if !w.m.draining {
		w.step(weak.Decline{Task: ev.Exec.Task, ID: ev.ID, Reason: ev.Reason, Storage: ev.Storage, Now: w.m.now})
	}
}

// endOfData takes the task's own final snapshot, at once; once told of
// it, the task finishes.
func (w *taskMode) endOfData(t checkpoint.TaskID) {
	w.m.eod[t] = true
	w.step(weak.EndOfData{Task: t, Now: w.m.now})
}

// finishNeedsFinalCheckpoint: a task finishes on its own final snapshot.
func (w *taskMode) finishNeedsFinalCheckpoint() bool { return false }

func (w *taskMode) tick() { w.step(weak.Tick{Now: w.m.now}) }

func (w *taskMode) nextDeadline() (time.Time, bool) { return w.snaps.NextDeadline() }

// resume, suspendForFailover and resumeAfterFailover do nothing: each
// task's snapshots follow its own state, not the job's, and the other
// tasks keep snapshotting while one restarts.
func (w *taskMode) resume()                   {}
func (w *taskMode) suspendForFailover(string) {}
func (w *taskMode) resumeAfterFailover()      {}

// lost restarts each lost task alone, from its own point; the failover
// handler restarts their singleton regions.
func (w *taskMode) lost(tasks []checkpoint.TaskID, cause string) {
	for _, t := range tasks {
		w.step(weak.Down{Task: t, Reason: cause, Now: w.m.now})
	}
}

func (w *taskMode) persisted(id checkpoint.ID, err error, registration bool) {
	w.step(weak.Persisted{ID: id, Err: err, Registration: registration, Now: w.m.now})
}

// registrationError keeps a refused registration's error as it is: a
// task snapshot's failure is its task's only.
func (w *taskMode) registrationError(err error) error { return err }

func (w *taskMode) logFailure(t checkpoint.TaskID, _ int, err error) {
	w.m.log.Warn("task failed; it restarts alone", "task", t, "restore", w.restorePoint(t), "cause", err)
}

// step steps the snapshots and performs their actions; it returns them
// for a caller that answers with an id.
func (w *taskMode) step(ev weak.Event) []weak.Action {
	m := w.m
	acts := w.snaps.Step(ev)
	for _, act := range acts {
		switch act := act.(type) {
		case weak.Trigger:
			m.triggered[act.ID] = true
			w.held = append(w.held, act)
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

// releaseHeld sends the held snapshot triggers still in flight and not
// yet acknowledged, in order; one at or above the reserved id bound waits
// for a reservation, as a barrier does (releaseBarriers).
func (w *taskMode) releaseHeld() {
	m := w.m
	held := w.held
	w.held = nil
	for i, t := range held {
		if id, acked, ok := w.snaps.InFlight(t.Task); !ok || id != t.ID || acked || m.draining {
			continue // aborted meanwhile (its task stopped, or it timed out)
		}
		if m.cfg.Reserve && t.ID >= m.reserved && !m.waive {
			w.held = held[i:]
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
	w, ok := m.mode.(*taskMode)
	if !ok {
		return 0, 0
	}
	return w.snaps.Counts()
}

// LatestSnapshot returns task's newest completed snapshot (Config.Weak):
// the point it restarts from; 0 if it has none (it restarts from
// Config.Initial).
func (m *Machine) LatestSnapshot(task checkpoint.TaskID) checkpoint.ID {
	w, ok := m.mode.(*taskMode)
	if !ok {
		return 0
	}
	return w.snaps.Latest(task)
}
