package jobmaster

import (
	"fmt"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/failover"
)

// feed queues an event for the failover handler; runFailover steps it.
func (m *Machine) feed(ev failover.Event) { m.fq = append(m.fq, ev) }

// runFailover steps the queued failover events and performs the actions,
// which may queue more (a cancel of an execution that is terminal already
// answers at once).
func (m *Machine) runFailover() {
	for len(m.fq) > 0 && !m.draining && m.end == nil && m.fatal == nil {
		ev := m.fq[0]
		m.fq = m.fq[1:]
		for _, act := range m.handler.Step(ev) {
			m.performFailover(act)
		}
		m.restartDue()
	}
	m.fq = m.fq[:0]
}

func (m *Machine) performFailover(act failover.Action) {
	switch act := act.(type) {
	case failover.SuspendCheckpointing:
		m.mode.suspendForFailover(act.Reason)
	case failover.ResumeCheckpointing:
		m.mode.resumeAfterFailover()
	case failover.Cancel:
		for _, t := range act.Tasks {
			// Its region restarts and reads its input again.
			delete(m.eod, t)
		}
		m.unwait(act.Tasks)
		m.cancel(act.Tasks)
	case failover.ArmTimer:
		m.timers = append(m.timers, act.At)
	case failover.Restart:
		m.restarts = append(m.restarts, act.Regions...)
	case failover.FailJob:
		reason := m.strategy.last.Reason
		if IsUnrecoverable(m.failCause) {
			reason = "a restart cannot fix this failure"
		}
		cause := m.failCause
		if cause == nil {
			cause = act.Cause
		}
		m.end = &JobFailedError{Cause: cause, Restarts: m.handler.Restarts(), Reason: reason}
	}
}

// groups is the one fan-out by TaskManager: the current executions of
// tasks that keep accepts (live ones), grouped by the TaskManager they run
// on, groups in the order of their first task.
func (m *Machine) groups(tasks []checkpoint.TaskID, keep func(*execution) bool) []Group {
	var out []Group
	at := map[TM]int{}
	for _, t := range tasks {
		e := m.execs[t]
		if !keep(e) {
			continue
		}
		i, ok := at[e.tm]
		if !ok {
			i = len(out)
			at[e.tm] = i
			out = append(out, Group{TM: e.tm})
		}
		out[i].Execs = append(out[i].Execs, ExecutionID{Task: t, Attempt: e.attempt})
	}
	return out
}

func live(e *execution) bool { return !e.state.Terminal() }

// cancel asks the TaskManagers to cancel the executions of tasks that
// still run; one that ended already counts as stopped at once.
func (m *Machine) cancel(tasks []checkpoint.TaskID) {
	if !m.draining {
		for _, t := range tasks {
			if m.execs[t].state.Terminal() {
				m.feed(failover.TaskTerminal{Task: t})
			}
		}
	}
	if g := m.groups(tasks, live); len(g) > 0 {
		m.emit(CancelExecs{Groups: g})
	}
}

// stopSources tells the source executions among tasks (all if nil) to end
// their input now.
func (m *Machine) stopSources(tasks []checkpoint.TaskID) {
	src := m.cfg.Sources
	if tasks != nil {
		src = slices.DeleteFunc(slices.Clone(src), func(t checkpoint.TaskID) bool { return !slices.Contains(tasks, t) })
	}
	if g := m.groups(src, live); len(g) > 0 {
		m.emit(StopSources{Groups: g})
	}
}

// restartDue asks for the restore point of the regions the handler
// restarts once no metadata write is in flight: such a write may still
// complete a checkpoint, which must then be the one restored. The restart
// itself happens when LatestLoaded comes back.
func (m *Machine) restartDue() { m.mode.restartDue() }

// loadLatestDue asks for the restore point of the regions due for a
// restart (barrier checkpoints).
func (m *Machine) loadLatestDue() {
	if len(m.restarts) == 0 || m.persisting > 0 || m.loading || m.draining {
		return
	}
	m.loading = true
	m.emit(LoadLatest{})
}

// latestLoaded restarts the regions due from the restore point the load
// found. Regions that became due while it loaded restart with them: no
// checkpoint can complete meanwhile (checkpointing is suspended from the
// failure until every restarted task runs, and no write was in flight).
func (m *Machine) latestLoaded(ev LatestLoaded) {
	m.loading = false
	if m.draining || len(m.restarts) == 0 {
		return
	}
	if m.persisting > 0 {
		// Not possible while suspended; if it were, the write's StoreDone
		// asks again.
		return
	}
	if ev.Err != nil {
		m.fatal = ev.Err
		return
	}
	if ev.Restore == nil {
		if id := m.newestCompleted(); id > 0 {
			// A completed checkpoint is retained until a newer one
			// completes, so the storage lost it: its folder was removed
			// or emptied while the job ran. That is what happens to a
			// zombie, a process paused (GC, SIGSTOP, a partitioned host)
			// while another with the same state folder resumed its
			// checkpoint, finished the job and removed the folder.
			// Restarting from the initial point would replay everything
			// since, and the sinks committed at the checkpoints the job
			// completed: their output would be written twice.
			m.fatal = Unrecoverable(fmt.Errorf("restart: checkpoint %d completed in this run, but the checkpoint storage holds no completed checkpoint now (its folder was removed or emptied: by another process with the same state folder, which may have finished this job, or by hand); not restarting from the start, which would write the committed output again", id))
			m.log.Error("restart refused: the completed checkpoints are gone from the storage", "newest_completed", id)
			return
		}
	}
	rp := m.restorePointFor(ev.Restore)
	// A region failed again while the load ran (a global failure hits a
	// region restarting, deployed or not) is no longer due: the handler
	// waits for its new delay and restarts it once more then. Deployed
	// now, it would run beside the attempt that restart deploys.
	regions := slices.DeleteFunc(m.restarts, func(r int) bool { return m.handler.State(r) != failover.Restoring })
	m.restarts = nil
	if len(regions) == 0 {
		return
	}
	// Checkpointing is suspended: nothing is pending but what persists,
	// so every checkpoint triggered and not completed was aborted; remove
	// what it left (late uploads to the shared area too, at the next
	// sweep: hence Aborted, as at the job's end).
	if ids := m.incomplete(m.coord.Pending()); len(ids) > 0 {
		m.emit(Discard{IDs: ids, Aborted: true})
	}
	var tasks []checkpoint.TaskID
	for _, r := range regions {
		tasks = append(tasks, m.cfg.Regions[r]...)
	}
	slices.SortFunc(tasks, compareTaskID)
	tasks = slices.Compact(tasks)
	if rp != nil {
		m.log.Info("restoring", "checkpoint", rp.ID, "path", rp.Path, "attempt", m.handler.Restarts(), "regions", regions)
	} else {
		m.log.Info("restarting without state", "attempt", m.handler.Restarts(), "regions", regions)
	}
	for _, t := range tasks {
		e := m.execs[t]
		if e.state == ExecFinished {
			m.finished-- // a global failure restarts finished tasks too
		}
		e.attempt++
		delete(m.eod, t)
	}
	m.deploy(tasks, rp)
	if !m.anyRegionFailing() {
		// Every region restarted since the final checkpoint completed;
		// the next final checkpoint is taken together again.
		m.finalDone = false
	}
}

// restorePointFor returns what a restarted region restores: the newest
// checkpoint this run took that verifies, else the job's initial point.
// Never an older run's checkpoint that happens to be newer than a --from
// checkpoint, which would resume a different history.
func (m *Machine) restorePointFor(latest *RestorePoint) *RestorePoint {
	initial := m.cfg.Initial
	if latest != nil && (initial == nil || latest.ID >= m.cfg.FirstOwn || latest.ID == initial.ID && initial.Own) {
		return latest
	}
	return initial
}

// newestCompleted is the newest checkpoint completed in this run; 0 if
// none.
func (m *Machine) newestCompleted() checkpoint.ID {
	var newest checkpoint.ID
	for id := range m.completed {
		newest = max(newest, id)
	}
	return newest
}

// incomplete returns the checkpoints triggered and neither completed nor
// in keep, in ascending order.
func (m *Machine) incomplete(keep []checkpoint.ID) []checkpoint.ID {
	var ids []checkpoint.ID
	for id := range m.triggered {
		if !m.completed[id] && !slices.Contains(keep, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func compareTaskID(a, b checkpoint.TaskID) int {
	if a.Vertex != b.Vertex {
		return a.Vertex - b.Vertex
	}
	return a.Subtask - b.Subtask
}
