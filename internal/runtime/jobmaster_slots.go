package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/failover"
)

// Cluster mode's scheduling: a deployment takes the logical slots of its
// tasks from the JobManager's slot pool, waits while there are too few
// (logging the shortage, failing the job after slot.request.timeout), and
// prepares each TaskManager before its first deployment of the job. A lost
// TaskManager fails the job's executions there; their regions restart
// through the failover handler like after any task failure.

// slotWaitLog is how often a deployment waiting for slots says so.
const slotWaitLog = 10 * time.Second

// slotWait is a deployment waiting for slots: the tasks of the regions
// to deploy and their restore point.
type slotWait struct {
	tasks    []checkpoint.TaskID
	rp       *restorePoint
	since    time.Time
	next     time.Time // next log line or the timeout, whichever is first
	shortage string
}

// deployOnSlots deploys tasks on the TaskManagers their logical slots are
// placed on, or waits for slots. A deployment already waiting takes the
// new tasks too (a region failed while another waited): both restore the
// same, newest, point.
func (jm *JobMaster) deployOnSlots(tasks []checkpoint.TaskID, rp *restorePoint) {
	now := jm.cfg.Now()
	if w := jm.waiting; w != nil {
		for _, t := range tasks {
			if !slices.Contains(w.tasks, t) {
				w.tasks = append(w.tasks, t)
			}
		}
		slices.SortFunc(w.tasks, compareTaskID)
		w.rp = rp
		jm.retryWaiting()
		return
	}
	jm.waiting = &slotWait{tasks: slices.Clone(tasks), rp: rp, since: now, next: now}
	jm.retryWaiting()
}

// retryWaiting tries the waiting deployment again.
func (jm *JobMaster) retryWaiting() {
	w := jm.waiting
	if w == nil || jm.draining {
		return
	}
	var logical []int
	for _, t := range w.tasks {
		logical = append(logical, t.Subtask)
	}
	slices.Sort(logical)
	logical = slices.Compact(logical)
	placed, shortage := jm.slots.Allocate(logical)
	if shortage != "" {
		now := jm.cfg.Now()
		if w.shortage == "" {
			// Nothing runs until the slots come: no checkpoint either.
			jm.perform(jm.coord.Step(coordinator.Suspend{Reason: "waiting for slots"}))
		}
		w.shortage = shortage
		if !now.Before(w.next) {
			msg := fmt.Sprintf("%s: waiting up to %s (slot.request.timeout); start TaskManagers or give them more --slots", shortage, jm.slotTimeout)
			jm.log.Warn(msg)
			jm.cfg.Status.setFailure(msg)
			w.next = now.Add(slotWaitLog)
		}
		if deadline := w.since.Add(jm.slotTimeout); w.next.After(deadline) {
			w.next = deadline
		}
		return
	}
	jm.waiting = nil
	jm.place = func(t checkpoint.TaskID) TaskManagerGateway { return placed[t.Subtask].TM }
	addr := func(t checkpoint.TaskID) string { return placed[t.Subtask].DataAddress }
	for _, l := range logical {
		tm := placed[l].TM
		if !jm.preparedOn[tm] {
			// Checkpoint notifications and the job's release go to jm.tms.
			jm.preparedOn[tm] = true
			jm.tms = append(jm.tms, tm)
			tm.PrepareJob(jm.spec, jm.desc)
		}
	}
	jm.deployTo(w.tasks, w.rp, addr)
	if w.shortage != "" && !jm.anyRegionFailing() {
		jm.perform(jm.coord.Step(coordinator.Resume{Now: jm.cfg.Now()}))
	}
	jm.updateState()
}

// slotTick tries a waiting deployment again (logging its shortage anew),
// and fails the job if it still lacks slots after slot.request.timeout: a
// restart cannot create slots. It tries before it fails: slots another
// job released come without a SlotsChanged.
func (jm *JobMaster) slotTick(now time.Time) {
	w := jm.waiting
	if w == nil || now.Before(w.next) {
		return
	}
	jm.retryWaiting()
	if jm.waiting != w || w.shortage == "" || now.Before(w.since.Add(jm.slotTimeout)) {
		return
	}
	jm.fatal = Unrecoverable(fmt.Errorf("%s after waiting %s (slot.request.timeout): start TaskManagers or give them more --slots", w.shortage, jm.slotTimeout))
	jm.waiting = nil
}

// taskManagerLost fails every live execution the job deployed through tm
// (one session of a TaskManager): they are gone with it, and their regions
// restart on other slots.
func (jm *JobMaster) taskManagerLost(tm TaskManagerGateway, reason string, now time.Time) {
	delete(jm.preparedOn, tm)
	jm.tms = slices.DeleteFunc(jm.tms, func(g TaskManagerGateway) bool { return g == tm })
	var lost []checkpoint.TaskID
	for _, t := range jm.all {
		e := jm.execs[t]
		if e.tm != tm || e.state.Terminal() {
			continue
		}
		e.state = ExecFailed
		jm.live--
		delete(jm.eod, t)
		lost = append(lost, t)
	}
	if len(lost) == 0 || jm.draining {
		return
	}
	cause := errors.New(reason)
	if !strings.Contains(reason, string(tm.ID())) {
		cause = fmt.Errorf("TaskManager %s lost: %s", tm.ID(), reason)
	}
	jm.log.Warn("TaskManager lost; restarting its regions", "tm", tm.ID(), "reason", reason, "tasks", len(lost))
	jm.cfg.Status.setFailure(cause.Error())
	jm.failCause = cause
	if jm.finalDone {
		jm.feed(failover.GlobalFailure{Reason: cause.Error(), Now: now})
		// The lost tasks are gone: the global failure's cancel counts
		// them as stopped.
		return
	}
	jm.feed(failover.TaskManagerLost{Tasks: lost, Reason: cause.Error(), Now: now})
}
