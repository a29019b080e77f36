package jobmaster

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/failover"
)

// A deployment takes the logical slots of its tasks from the Placement,
// waits while there are too few (reporting the shortage, failing the job
// after SlotTimeout), and prepares each TaskManager before its first
// deployment of the job. Local placement never runs short, so local mode
// takes the same path and deploys at once.

// slotWait is a deployment waiting for slots: the tasks of the regions to
// deploy and their restore point.
type slotWait struct {
	tasks    []checkpoint.TaskID
	rp       *RestorePoint
	since    time.Time
	next     time.Time // next report or the timeout, whichever is first
	shortage string
}

// deploy deploys tasks (their current attempts) from rp, or waits for
// slots. A deployment already waiting takes the new tasks too (a region
// failed while another waited): both restore the same, newest, point.
func (m *Machine) deploy(tasks []checkpoint.TaskID, rp *RestorePoint) {
	if w := m.waiting; w != nil {
		for _, t := range tasks {
			if !slices.Contains(w.tasks, t) {
				w.tasks = append(w.tasks, t)
			}
		}
		slices.SortFunc(w.tasks, compareTaskID)
		w.rp = rp
	} else {
		m.waiting = &slotWait{tasks: slices.Clone(tasks), rp: rp, since: m.now, next: m.now}
	}
	m.retryWaiting()
}

// retryWaiting tries the waiting deployment again.
func (m *Machine) retryWaiting() {
	w := m.waiting
	if w == nil || m.draining {
		return
	}
	var logical []int
	for _, t := range w.tasks {
		logical = append(logical, t.Subtask)
	}
	slices.Sort(logical)
	logical = slices.Compact(logical)
	placed, shortage := m.cfg.Placement.Place(logical)
	if shortage != "" {
		if w.shortage == "" {
			// Nothing runs until the slots come: no checkpoint either.
			m.coordStep(coordinator.Suspend{Reason: "waiting for slots"})
		}
		w.shortage = shortage
		if !m.now.Before(w.next) {
			msg := fmt.Sprintf("%s: waiting up to %s (slot.request.timeout); start TaskManagers or give them more --slots", shortage, m.cfg.SlotTimeout)
			m.log.Warn(msg)
			m.emit(Failure{Cause: msg})
			w.next = m.now.Add(slotWaitLog)
		}
		if deadline := w.since.Add(m.cfg.SlotTimeout); w.next.After(deadline) {
			w.next = deadline
		}
		return
	}
	m.waiting = nil
	for _, l := range logical {
		// Checkpoint notifications and the job's release go to m.tms.
		m.prepareOn(placed[l].TM)
	}
	m.deployTo(w.tasks, w.rp, placed)
	if w.shortage != "" && !m.anyRegionFailing() {
		m.mode.resume()
	}
}

// deployTo starts the executions of tasks on the slots placed, one group
// per TaskManager.
func (m *Machine) deployTo(tasks []checkpoint.TaskID, rp *RestorePoint, placed map[int]Slot) {
	var moved []checkpoint.TaskID // restarted on another TaskManager than their previous attempt
	for _, t := range tasks {
		e := m.execs[t]
		if e.placed && e.tm != placed[t.Subtask].TM {
			moved = append(moved, t)
		}
		e.state, e.tm, e.placed, e.covered = ExecDeploying, placed[t.Subtask].TM, true, false
		m.live++
	}
	if m.slotOf == nil {
		m.slotOf = map[int]Slot{}
	}
	for l, s := range placed {
		m.slotOf[l] = s
	}
	m.mode.deploy(tasks, placed, rp, moved)
	if len(m.stops) > 0 {
		// A stop was asked for before: the redeployed sources stop too.
		m.stopSources(tasks)
	}
}

// unwait drops tasks from a deployment waiting for slots: their region
// failed again (a global failure hits a region restarting, deployed or
// not) and restarts once more after its new delay. Deployed when slots
// come, they would run beside the attempt that restart deploys.
func (m *Machine) unwait(tasks []checkpoint.TaskID) {
	w := m.waiting
	if w == nil {
		return
	}
	w.tasks = slices.DeleteFunc(w.tasks, func(t checkpoint.TaskID) bool { return slices.Contains(tasks, t) })
	if len(w.tasks) == 0 {
		// Checkpointing stays suspended: the failover handler resumes it
		// once every region runs again.
		m.waiting = nil
	}
}

// slotTick tries a waiting deployment again (reporting its shortage
// anew), and fails the job if it still lacks slots after SlotTimeout: a
// restart cannot create slots. It tries before it fails: slots another
// job released come without a SlotsOffered.
func (m *Machine) slotTick() {
	w := m.waiting
	if w == nil || m.now.Before(w.next) {
		return
	}
	m.retryWaiting()
	if m.waiting != w || w.shortage == "" || m.now.Before(w.since.Add(m.cfg.SlotTimeout)) {
		return
	}
	m.fatal = Unrecoverable(fmt.Errorf("%s after waiting %s (slot.request.timeout): start TaskManagers or give them more --slots", w.shortage, m.cfg.SlotTimeout))
	m.waiting = nil
}

// taskManagerLost fails every live execution the job deployed on tm: they
// are gone with it, and their regions restart on other slots.
func (m *Machine) taskManagerLost(tm TM, cause string) {
	delete(m.prepared, tm)
	m.tms = slices.DeleteFunc(m.tms, func(x TM) bool { return x == tm })
	var lost []checkpoint.TaskID
	for _, t := range m.cfg.Tasks {
		e := m.execs[t]
		if e.tm != tm || e.state.Terminal() {
			continue
		}
		e.state = ExecFailed
		m.live--
		delete(m.eod, t)
		lost = append(lost, t)
	}
	if len(lost) == 0 || m.draining {
		return
	}
	m.log.Warn("TaskManager lost; restarting its regions", "tm", tm, "reason", cause, "tasks", len(lost))
	m.emit(Failure{Cause: cause})
	m.mode.lost(lost, cause)
	m.failCause = errors.New(cause)
	if m.finalDone {
		// The lost tasks are gone. The global failure's cancel counts
		// those of the regions it hits as stopped; a region failing
		// already (the global failure that restarts every region after
		// a final checkpoint) is not hit and would wait forever for a
		// cancel no TaskManager will answer, so each counts as stopped.
		m.feed(failover.GlobalFailure{Reason: cause, Now: m.now})
		for _, t := range lost {
			m.feed(failover.TaskTerminal{Task: t})
		}
		return
	}
	m.feed(failover.TaskManagerLost{Tasks: lost, Reason: cause, Now: m.now})
}
