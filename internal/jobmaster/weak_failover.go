package jobmaster

import (
	"maps"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/failover"
	"github.com/weirstream/weir/internal/weak"
)

// Single-task failover (Config.Weak). Every task is its own region, so the
// failover handler restarts a failed task alone, after the restart
// strategy's delay (one decision per failure: a lost TaskManager is one
// failure however many tasks it ran). The task is deployed from its own
// newest completed snapshot, else Config.Initial; there is no LoadLatest,
// since the Machine knows each task's point. Its snapshot not yet
// acknowledged is aborted; one whose metadata is being written is waited
// for: a write that completes must be the snapshot restored. The other
// tasks keep running and snapshotting. There is no global failover: a
// task that fails after others finished restarts alone too.

// stateChanged tells the snapshots about an execution's new state.
func (w *taskMode) stateChanged(t checkpoint.TaskID, st ExecState, err error) {
	m := w.m
	switch st {
	case ExecRunning:
		w.step(weak.Running{Task: t, Now: m.now})
	case ExecFinished:
		w.step(weak.Finished{Task: t})
		if len(m.tms) > 0 {
			m.emit(WeakPeers{TMs: slices.Clone(m.tms), Finished: []checkpoint.TaskID{t}})
		}
	case ExecCanceled:
		w.step(weak.Down{Task: t, Reason: "cancelled", Now: m.now})
	case ExecFailed:
		reason := "failed"
		if err != nil {
			reason = err.Error()
		}
		w.step(weak.Down{Task: t, Reason: reason, Now: m.now})
	}
}

// restartDue deploys the tasks due for a restart whose own metadata
// write is not in flight; the others wait for it (persisted calls again).
func (w *taskMode) restartDue() {
	m := w.m
	if len(m.restarts) == 0 || m.draining {
		return
	}
	var ready []checkpoint.TaskID
	var wait []int
	for _, r := range m.restarts {
		if m.handler.State(r) != failover.Restoring {
			continue
		}
		t := m.cfg.Regions[r][0]
		if w.snaps.Persisting(t) {
			wait = append(wait, r)
			continue
		}
		ready = append(ready, t)
	}
	m.restarts = wait
	if len(ready) == 0 {
		return
	}
	slices.SortFunc(ready, compareTaskID)
	for _, t := range ready {
		e := m.execs[t]
		if e.state == ExecFinished {
			m.finished-- // not possible: a finished task never fails
		}
		e.attempt++
		delete(m.eod, t)
	}
	m.log.Info("restarting tasks alone", "tasks", len(ready), "attempt", m.handler.Restarts())
	m.deploy(ready, nil)
}

// restorePoint is what task t restores: its newest completed snapshot,
// else the job's initial point.
func (w *taskMode) restorePoint(t checkpoint.TaskID) *RestorePoint {
	if id := w.snaps.Latest(t); id > 0 {
		return &RestorePoint{ID: id, Own: true}
	}
	return w.m.cfg.Initial
}

// deploy deploys tasks restarted alone (or every task, at the start):
// the TaskManagers hear which peers finished and which moved, and each
// task restores its own point.
func (w *taskMode) deploy(tasks []checkpoint.TaskID, _ map[int]Slot, _ *RestorePoint, moved []checkpoint.TaskID) {
	w.m.weakFinishedTo(tasks)
	w.deployEach(tasks, maps.Clone(w.m.slotOf))
	w.m.weakMoved(moved)
}

// deployEach deploys tasks, each from its own restore point: one Deploy
// per distinct point, in the order of their first task. The restore
// points are chosen now, when the slots are there: no write of these
// tasks is in flight (they do not run, and weakRestartDue waited). slots
// holds every logical slot's placement, the peers' included: the tasks'
// channels reach peers that keep running where they are.
func (w *taskMode) deployEach(tasks []checkpoint.TaskID, slots map[int]Slot) {
	m := w.m
	var points []*RestorePoint
	byPoint := map[string][]checkpoint.TaskID{}
	for _, t := range tasks {
		rp := w.restorePoint(t)
		k := rp.String()
		if _, ok := byPoint[k]; !ok {
			points = append(points, rp)
		}
		byPoint[k] = append(byPoint[k], t)
	}
	for _, rp := range points {
		ts := byPoint[rp.String()]
		if rp != nil {
			m.log.Info("restoring", "checkpoint", rp.ID, "path", rp.Path, "tasks", len(ts), "attempt", m.execs[ts[0]].attempt)
		}
		m.emit(Deploy{Groups: m.groups(ts, live), Slots: slots, Restore: rp, Attempt: m.execs[ts[0]].attempt})
	}
}

// weakFinishedTo tells the TaskManagers about to run tasks (a restart)
// which tasks finished: their channels to those consumers discard what
// they send (WeakPeers). A first deployment has none.
func (m *Machine) weakFinishedTo(tasks []checkpoint.TaskID) {
	var finished []checkpoint.TaskID
	for _, t := range m.cfg.Tasks {
		if m.execs[t].state == ExecFinished {
			finished = append(finished, t)
		}
	}
	if len(finished) == 0 {
		return
	}
	var tms []TM
	for _, t := range tasks {
		if tm := m.execs[t].tm; !slices.Contains(tms, tm) {
			tms = append(tms, tm)
		}
	}
	slices.Sort(tms)
	m.emit(WeakPeers{TMs: tms, Finished: finished})
}

// weakMoved tells every TaskManager of the job that tasks just deployed
// run on another TaskManager than their previous attempt did (it was
// lost), so that their consumers reconnect to them instead of restarting
// (WeakPeers). It is decided per task, not per logical slot: a task of a
// moved slot deployed later than its slot-mates (its own restart delay)
// moved too.
func (m *Machine) weakMoved(moved []checkpoint.TaskID) {
	var out []MovedProducer
	for _, t := range moved {
		e := m.execs[t]
		out = append(out, MovedProducer{Exec: ExecutionID{Task: t, Attempt: e.attempt}, Slot: m.slotOf[t.Subtask]})
	}
	if len(out) == 0 || len(m.tms) == 0 {
		return
	}
	m.emit(WeakPeers{TMs: slices.Clone(m.tms), Moved: out})
}
