package jobmaster

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
)

// snapshotMode is how the Machine snapshots the job's state and restarts
// what fails; the Machine holds one and calls it where the modes differ.
// Everything else (executions, slots, the failover handler, requests that
// end the job, the job's end) is shared.
//
//   - barrierMode (EXACTLY_ONCE, AT_LEAST_ONCE): the coordinator's
//     checkpoints, a consistent cut of every task taken with barriers; a
//     failure restarts the task's region from the newest completed one.
//   - taskMode (WEAKLY_CONSISTENT, weak.go): each task snapshots on its
//     own schedule and restarts alone from its own newest snapshot.
type snapshotMode interface {
	// coordinatorConfig is the configuration the coordinator gets.
	coordinatorConfig(c coordinator.Config) coordinator.Config
	// ack and decline take a live execution's answer to a trigger.
	ack(ev Ack)
	decline(ev Decline)
	// endOfData takes a task's end of input (once per task, not while the
	// job ends).
	endOfData(t checkpoint.TaskID)
	// stateChanged follows an execution's new state, after the Machine's
	// own rules (not while the job ends).
	stateChanged(t checkpoint.TaskID, st ExecState, err error)
	// finishNeedsFinalCheckpoint reports whether a FINISHED report is
	// refused unless a completed final checkpoint covers the execution
	// (refuseFinished).
	finishNeedsFinalCheckpoint() bool
	// tick and nextDeadline are the mode's own timers, beside the
	// coordinator's and the failover handler's.
	tick()
	nextDeadline() (time.Time, bool)
	// resume lets snapshots be triggered once the job is deployed;
	// suspendForFailover and resumeAfterFailover follow the failover
	// handler's regions.
	resume()
	suspendForFailover(reason string)
	resumeAfterFailover()
	// releaseHeld sends the triggers held for an id reservation or a
	// sweep, once neither is in flight.
	releaseHeld()
	// serve answers an outside request while the job runs.
	serve(req Request)
	// restartDue restarts the regions due for a restart, or asks for
	// what they need first.
	restartDue()
	// deploy deploys tasks into placed (their logical slots) from rp;
	// moved are those whose TaskManager changed since their last attempt.
	deploy(tasks []checkpoint.TaskID, placed map[int]Slot, rp *RestorePoint, moved []checkpoint.TaskID)
	// lost takes the tasks a lost TaskManager ran.
	lost(tasks []checkpoint.TaskID, cause string)
	// persisted ends a metadata write (and registration); a refused
	// registration's error is first given context by registrationError.
	persisted(id checkpoint.ID, err error, registration bool)
	registrationError(err error) error
	// logFailure says what a recoverable task failure restarts.
	logFailure(t checkpoint.TaskID, region int, err error)
}

// modeConfig adjusts cfg to its mode: with per-task snapshots every task
// is its own region, so that a failure restarts it alone.
func modeConfig(cfg Config) Config {
	if cfg.Weak {
		cfg.Regions = make([][]checkpoint.TaskID, len(cfg.Tasks))
		for i, t := range cfg.Tasks {
			cfg.Regions[i] = []checkpoint.TaskID{t}
		}
	}
	return cfg
}

// newMode returns m's snapshot mode.
func newMode(m *Machine) snapshotMode {
	if m.cfg.Weak {
		return newTaskMode(m)
	}
	return barrierMode{m}
}

// barrierMode is the coordinator's barrier checkpoints with region
// failover; its rules live in checkpoints.go, failover.go and
// placement.go, which it calls.
type barrierMode struct{ m *Machine }

func (b barrierMode) coordinatorConfig(c coordinator.Config) coordinator.Config { return c }

func (b barrierMode) ack(ev Ack) {
	b.m.coordStep(coordinator.Ack{Task: ev.Exec.Task, ID: ev.ID, State: ev.State})
}

func (b barrierMode) decline(ev Decline) {
	cause := coordinator.CauseDeclined
	if ev.Storage {
		cause = coordinator.CauseStorage
	}
	b.m.coordStep(coordinator.Decline{Task: ev.Exec.Task, ID: ev.ID, Reason: ev.Reason, Cause: cause})
}

func (b barrierMode) endOfData(t checkpoint.TaskID)                    { b.m.endOfInput(t) }
func (b barrierMode) stateChanged(checkpoint.TaskID, ExecState, error) {}
func (b barrierMode) finishNeedsFinalCheckpoint() bool                 { return true }
func (b barrierMode) tick()                                            {}
func (b barrierMode) nextDeadline() (time.Time, bool)                  { return time.Time{}, false }

func (b barrierMode) resume() { b.m.coordStep(coordinator.Resume{Now: b.m.now}) }

func (b barrierMode) suspendForFailover(reason string) {
	b.m.log.Info("checkpointing suspended", "reason", reason)
	b.m.coordStep(coordinator.Suspend{Reason: reason})
}

func (b barrierMode) resumeAfterFailover() {
	b.m.log.Info("checkpointing resumed")
	b.resume()
}

func (b barrierMode) releaseHeld()      { b.m.releaseBarriers() }
func (b barrierMode) serve(req Request) { b.m.serveCheckpoints(req) }
func (b barrierMode) restartDue()       { b.m.loadLatestDue() }

func (b barrierMode) deploy(tasks []checkpoint.TaskID, placed map[int]Slot, rp *RestorePoint, _ []checkpoint.TaskID) {
	m := b.m
	m.emit(Deploy{
		Groups:  m.groups(tasks, live),
		Slots:   placed,
		Restore: rp,
		Attempt: m.execs[tasks[0]].attempt,
	})
}

func (b barrierMode) lost([]checkpoint.TaskID, string) {}

func (b barrierMode) persisted(id checkpoint.ID, err error, registration bool) {
	b.m.coordStep(coordinator.Persisted{ID: id, Err: err, Registration: registration, Now: b.m.now})
}

func (b barrierMode) registrationError(err error) error {
	return fmt.Errorf("register checkpoint: %w", err)
}

func (b barrierMode) logFailure(t checkpoint.TaskID, region int, err error) {
	b.m.log.Warn("task failed; its region fails over", "task", t, "region", region, "cause", err)
}
