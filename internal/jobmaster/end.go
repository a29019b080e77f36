package jobmaster

import (
	"errors"

	"github.com/weirstream/weir/internal/checkpoint/coordinator"
)

// checkEnd starts draining once the job finished, failed for good or was
// cancelled: every live execution is cancelled. The job ends once every
// execution stopped and no metadata write or savepoint copy is in flight:
// a metadata write that succeeds now still completes its checkpoint,
// because the file exists and a restore would use it.
func (m *Machine) checkEnd() {
	if !m.draining {
		done := m.deployed && m.finished >= len(m.cfg.Tasks)
		if m.end == nil && m.fatal == nil && m.canceled == nil && !done {
			return
		}
		m.draining = true
		m.waiting = nil
		m.cancel(m.cfg.Tasks)
	}
	if m.live > 0 || m.persisting > 0 || m.copying > 0 {
		return
	}
	m.finish()
}

// finish ends the job: it aborts what is pending (after a failure),
// removes what incomplete checkpoints left, answers every request and
// reports the outcome.
func (m *Machine) finish() {
	m.ended = true
	outcome := m.outcome()
	if outcome.Err != nil {
		m.coordStep(coordinator.Reset{Reason: outcome.Err.Error()})
	}
	// No task writes any more: remove what checkpoints that never
	// completed left behind (an abort's Discard can race with a late
	// asynchronous write that recreates the folder). Aborted, so that
	// the sweep below runs even if one ran since their abort: a late
	// upload to the shared area lands after that sweep too, and would
	// be left there, referenced by nothing.
	if ids := m.incomplete(nil); len(ids) > 0 {
		m.emit(Discard{IDs: ids, Aborted: true})
	}
	m.emit(SweepShared{})
	reason := outcome.Err
	if reason == nil {
		reason = errors.New("the job finished")
	}
	m.failRequests(reason)
	m.emit(ReleaseJob{TMs: m.tms})
	m.state = outcome.State
	m.emit(outcome)
	m.answerStops(outcome.Err)
}

// outcome is the job's end: a cancel wins, then a fatal error, then the
// restart strategy's refusal; else it finished.
func (m *Machine) outcome() JobEnded {
	switch {
	case m.canceled != nil:
		return JobEnded{State: JobCanceled, Err: m.canceled}
	case m.fatal != nil:
		return JobEnded{State: JobFailed, Err: m.fatal}
	case m.end != nil:
		return JobEnded{State: JobFailed, Err: m.end}
	}
	return JobEnded{State: JobFinished}
}
