package jobstatus

import (
	"slices"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
)

// Recorder writes a JobStatus: it is the status with the writers' method
// set. The runtime holds one for the job it runs (the JobMaster driver
// records states, checkpoints, failures and restores; tasks count source
// records and restored channel state), and the Env that owns a status
// resets it between runs. Readers hold the *JobStatus, whose methods only
// read.
//
// Recorder is a defined type over JobStatus, not a wrapper: RecorderOf is
// a pointer conversion, the fields are the same memory, and a write costs
// what it cost as a method of JobStatus (one atomic per batch on the
// tasks' path). Go cannot keep a reader from calling RecorderOf;
// internal/archtest does: only the writers (internal/runtime, the
// cluster's JobManager, internal/plan) may name it.
type Recorder JobStatus

// RecorderOf returns the Recorder of s.
func RecorderOf(s *JobStatus) *Recorder { return (*Recorder)(s) }

// Status returns the status r writes, for reading.
func (r *Recorder) Status() *JobStatus { return (*JobStatus)(r) }

func (r *Recorder) mon() *monitor { return r.Status().mon() }

// SetState records the job's state at now. The first state sets the start
// time, a terminal one the end time.
func (r *Recorder) SetState(state JobState, now time.Time) {
	m := r.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started.IsZero() {
		m.started = now
	}
	m.state = state
	if state.Terminal() {
		m.ended = now
	}
}

// SetFailure records the most recent failure cause (LastFailure).
func (r *Recorder) SetFailure(msg string) { r.lastFailure.Store(&msg) }

// CountFailed counts a failed checkpoint (FailedCheckpoints) of cause.
func (r *Recorder) CountFailed(cause coordinator.Cause) {
	r.FailedCheckpoints.Add(1)
	r.failedByCause[int(cause)%len(r.failedByCause)].Add(1)
}

// SetVertices records the job's vertices and its number of subtasks.
func (r *Recorder) SetVertices(vertices []VertexInfo, numTasks int) {
	m := r.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.vertices = vertices
	m.numTasks = numTasks
}

// SetTaskSource sets where Tasks reads the running tasks' counters; nil
// once nothing runs.
func (r *Recorder) SetTaskSource(src func() []TaskStats) {
	m := r.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.taskSource = src
}

// CheckpointTriggered enters checkpoint id in the history, in progress
// since at.
func (r *Recorder) CheckpointTriggered(id checkpoint.ID, kind checkpoint.Kind, at time.Time) {
	m := r.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.history {
		if m.history[i].ID == id { // entered by CheckpointAnswered
			m.history[i].Kind, m.history[i].TriggerTime = kind.String(), at
			return
		}
	}
	m.history = append(m.history, CheckpointStats{ID: id, Kind: kind.String(), Status: CheckpointInProgress, TriggerTime: at, Subtasks: m.numTasks})
	if len(m.history) > historySize {
		m.history = append(m.history[:0], m.history[len(m.history)-historySize:]...)
	}
}

// CheckpointAnswered enters a requested checkpoint whose id the requester
// is told before its barrier goes out (the JobMaster holds a trigger back
// while a sweep of shared files or an id reservation is in flight): the
// id the caller polls is in the history from the answer on, in progress.
func (r *Recorder) CheckpointAnswered(id checkpoint.ID, at time.Time) {
	m := r.mon()
	m.mu.Lock()
	found := slices.ContainsFunc(m.history, func(c CheckpointStats) bool { return c.ID == id })
	m.mu.Unlock()
	if !found {
		r.CheckpointTriggered(id, checkpoint.Periodic, at)
	}
}

// CheckpointAcknowledged adds a subtask's acknowledgement, received at,
// to the statistics of checkpoint id.
func (r *Recorder) CheckpointAcknowledged(id checkpoint.ID, st checkpoint.TaskState, at time.Time) {
	r.updateCheckpoint(id, func(c *CheckpointStats) { c.acknowledged(st, at) })
}

// CheckpointFailed records that checkpoint id failed after d, with the
// reason and its cause (coordinator.Cause's name).
func (r *Recorder) CheckpointFailed(id checkpoint.ID, d time.Duration, reason, cause string) {
	r.updateCheckpoint(id, func(c *CheckpointStats) {
		c.Status, c.Duration, c.FailureReason, c.FailureCause = CheckpointFailed, d, reason, cause
	})
}

// updateCheckpoint applies f to the history entry of id, if still kept.
func (r *Recorder) updateCheckpoint(id checkpoint.ID, f func(*CheckpointStats)) {
	m := r.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.history {
		if m.history[i].ID == id {
			f(&m.history[i])
		}
	}
}
