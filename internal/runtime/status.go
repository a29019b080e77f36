package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// JobState is a job's state as monitoring shows it, with Flink's names;
// its string is what REST, metrics and the control plane carry.
type JobState string

// Job states, with Flink's names.
const (
	StateCreated    JobState = "CREATED"
	StateRunning    JobState = "RUNNING"
	StateRestarting JobState = "RESTARTING"
	StateFinished   JobState = "FINISHED"
	StateFailed     JobState = "FAILED"
	StateCanceled   JobState = "CANCELED"
)

// Terminal reports whether the job ended: FINISHED, FAILED or CANCELED.
func (s JobState) Terminal() bool {
	return s == StateFinished || s == StateFailed || s == StateCanceled
}

// Checkpoint states in the history, with Flink's names.
const (
	CheckpointInProgress = "IN_PROGRESS"
	CheckpointCompleted  = "COMPLETED"
	CheckpointFailed     = "FAILED"
)

// historySize is how many checkpoints the history keeps (Flink's
// web.checkpoints.history default is 10).
const historySize = 10

// CheckpointStats describes one checkpoint for monitoring.
type CheckpointStats struct {
	ID          checkpoint.ID `json:"id"`
	Kind        string        `json:"kind"`
	Status      string        `json:"status"`
	TriggerTime time.Time     `json:"trigger_timestamp"`
	// Duration is trigger to completion or failure; up to now while in
	// progress.
	Duration time.Duration `json:"end_to_end_duration"`
	// CheckpointedSize is what this checkpoint persisted; StateSize all the
	// state it references (see checkpointSizes). Both are 0 until its
	// metadata is written.
	CheckpointedSize int64  `json:"checkpointed_size"`
	StateSize        int64  `json:"state_size"`
	Acknowledged     int    `json:"num_acknowledged_subtasks"`
	Subtasks         int    `json:"num_subtasks"`
	FailureReason    string `json:"failure_message,omitempty"`
	// FailureCause classifies a failed checkpoint: declined, timeout,
	// storage, registration; or for an abandoned one task-failure.
	FailureCause string `json:"failure_cause,omitempty"`

	// In-flight data, summed over the acknowledged subtasks (see
	// SubtaskCheckpointStats for each figure).
	AlignmentBufferedBytes int64 `json:"alignment_buffered"`
	ProcessedInFlightBytes int64 `json:"processed_data"`
	PersistedInFlightBytes int64 `json:"persisted_data"`
	// StartDelay and AlignmentDuration are the largest of any subtask.
	StartDelay        time.Duration `json:"start_delay"`
	AlignmentDuration time.Duration `json:"alignment_duration"`
	// Unaligned is set once a subtask snapshotted unaligned.
	Unaligned bool `json:"unaligned_checkpoint"`
	// SubtaskStats are the acknowledged subtasks, in acknowledgement order.
	SubtaskStats []SubtaskCheckpointStats `json:"subtasks,omitempty"`
}

// TaskStats is a snapshot of one running subtask's counters.
type TaskStats struct {
	Vertex     int    `json:"vertex"`
	Name       string `json:"name"`
	Subtask    int    `json:"subtask"`
	RecordsIn  int64  `json:"records_in"`
	RecordsOut int64  `json:"records_out"`
	// BackPressured reports whether the task's outputs waited for credit
	// since the previous look (Flink's isBackPressured, sampled).
	BackPressured bool `json:"back_pressured"`
	// AlignmentTime is the alignment of the task's latest snapshot, first
	// barrier to last (Flink's checkpointAlignmentTime); 0 for sources.
	AlignmentTime time.Duration `json:"checkpoint_alignment_time"`
	// CreditsAvailable sums the credits the task's output channels hold:
	// Data buffers it may send now without waiting.
	CreditsAvailable int `json:"credits_available"`
	// InputWatermark is the task's input watermark (min over its active
	// input channels) and OutputWatermark the last watermark it sent,
	// milliseconds; both watermark.MinWatermark before the first (Flink's
	// currentInputWatermark, currentOutputWatermark).
	InputWatermark  int64 `json:"current_input_watermark"`
	OutputWatermark int64 `json:"current_output_watermark"`
	// LateRecordsDropped counts records the task's window operators
	// dropped as late beyond their allowed lateness (numLateRecordsDropped).
	LateRecordsDropped int64 `json:"num_late_records_dropped"`
	// Weak is the subtask's accounting in WEAKLY_CONSISTENT mode (nil in
	// the other modes), over all its attempts.
	Weak *TaskWeakStats `json:"weak,omitempty"`
}

// TaskWeakStats is one subtask's share of WeakStats: its failures and
// restarts, the records replayed to it and lost on its way in, the
// records it possibly duplicated on its way out, and its latest recovery.
type TaskWeakStats struct {
	Failures     int64         `json:"failures"`
	Restarts     int64         `json:"restarts"`
	Replayed     int64         `json:"records_replayed"`
	Lost         int64         `json:"records_lost"`
	Duplicated   int64         `json:"records_duplicated"`
	LastRecovery time.Duration `json:"last_recovery"`
}

// VertexInfo describes a job vertex (an operator chain).
type VertexInfo struct {
	ID          int    `json:"id"`
	Name        string `json:"name"`
	Parallelism int    `json:"parallelism"`
}

// monitor is the part of JobStatus behind a lock: history, state, the
// tasks of the running attempt, and on-demand trigger requests.
type monitor struct {
	mu      sync.Mutex
	state   JobState
	started time.Time
	ended   time.Time
	history []CheckpointStats // oldest first, at most historySize
	// taskSource reports the running tasks' counters: the local
	// TaskExecutor's Report, or in cluster mode the TaskManagers'
	// heartbeats; nil when nothing runs.
	taskSource func() []TaskStats
	vertices   []VertexInfo
	requests   chan triggerRequest
	numTasks   int
	// restoreAttempt is the attempt whose restore LastRestoreDuration
	// measures (status_restore.go).
	restoreAttempt int
}

// requestKind says what an external request asks of the running job.
type requestKind uint8

const (
	reqCheckpoint requestKind = iota
	reqSavepoint
	reqStop
)

type triggerRequest struct {
	kind   requestKind
	target string // savepoint folder
	reply  chan triggerReply
}

type triggerReply struct {
	id   checkpoint.ID
	path string // savepoint folder
	err  error
}

// ErrNotRunning is returned for requests a job can serve only while an
// attempt runs.
var ErrNotRunning = errors.New("job is not running")

func (s *JobStatus) mon() *monitor {
	s.once.Do(func() {
		s.m = &monitor{state: StateCreated, requests: make(chan triggerRequest)}
	})
	return s.m
}

// State returns the job state (RUNNING, RESTARTING, FINISHED, …).
func (s *JobStatus) State() JobState {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// Times returns when the job started and, once it ended, when it ended.
func (s *JobStatus) Times() (start, end time.Time) {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started, m.ended
}

func (s *JobStatus) setState(state JobState, now time.Time) {
	m := s.mon()
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

// Checkpoints returns the recent checkpoint history, oldest first.
func (s *JobStatus) Checkpoints(now time.Time) []CheckpointStats {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := append([]CheckpointStats(nil), m.history...)
	cloneSubtasks(out)
	for i := range out {
		if out[i].Status == CheckpointInProgress {
			out[i].Duration = now.Sub(out[i].TriggerTime)
		}
	}
	return out
}

// Vertices returns the job vertices.
func (s *JobStatus) Vertices() []VertexInfo {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]VertexInfo(nil), m.vertices...)
}

// Tasks returns the counters of the running subtasks.
func (s *JobStatus) Tasks() []TaskStats {
	m := s.mon()
	m.mu.Lock()
	src := m.taskSource
	m.mu.Unlock()
	if src == nil {
		return []TaskStats{}
	}
	return src()
}

// TriggerCheckpoint asks the running job for a checkpoint now (as Flink's
// POST /jobs/:jobid/checkpoints) and returns its id; the checkpoint
// completes or fails later (see Checkpoints). It fails with ErrNotRunning
// while the job restarts or after it ended, and with the coordinator's
// reason when it cannot trigger (too many checkpoints in progress).
func (s *JobStatus) TriggerCheckpoint(ctx context.Context) (checkpoint.ID, error) {
	r := s.request(ctx, triggerRequest{kind: reqCheckpoint})
	return r.id, r.err
}

// TriggerSavepoint takes a checkpoint now and, once it completed, copies it
// into a savepoint folder under target (as Flink's POST
// /jobs/:jobid/savepoints); it returns that folder. The job keeps running.
func (s *JobStatus) TriggerSavepoint(ctx context.Context, target string) (string, error) {
	if target == "" {
		return "", errors.New("savepoint: no target folder")
	}
	r := s.request(ctx, triggerRequest{kind: reqSavepoint, target: target})
	return r.path, r.err
}

// StopWithSavepoint stops the job gracefully (as Flink's stop): every
// source stops reading, the final checkpoint is taken, two-phase-commit
// sinks commit, and the job finishes. With a target, that final checkpoint
// is also copied into a savepoint folder under target, whose path it
// returns; a job started from it later continues where this one stopped.
func (s *JobStatus) StopWithSavepoint(ctx context.Context, target string) (string, error) {
	r := s.request(ctx, triggerRequest{kind: reqStop, target: target})
	return r.path, r.err
}

// request hands req to the running attempt and waits for its reply.
func (s *JobStatus) request(ctx context.Context, req triggerRequest) triggerReply {
	m := s.mon()
	if st := s.State(); st != StateRunning {
		return triggerReply{err: fmt.Errorf("%w (it is %s)", ErrNotRunning, st)}
	}
	req.reply = make(chan triggerReply, 1)
	select {
	case m.requests <- req:
	case <-ctx.Done():
		return triggerReply{err: ctx.Err()}
	case <-time.After(5 * time.Second):
		return triggerReply{err: ErrNotRunning}
	}
	select {
	case r := <-req.reply:
		return r
	case <-ctx.Done():
		return triggerReply{err: ctx.Err()}
	}
}

// setVertices records the job's vertices and its number of subtasks.
func (s *JobStatus) setVertices(vertices []VertexInfo, numTasks int) {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.vertices = vertices
	m.numTasks = numTasks
}

// setTaskSource sets where Tasks reads the running tasks' counters; nil
// once nothing runs.
func (s *JobStatus) setTaskSource(src func() []TaskStats) {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.taskSource = src
}

func (s *JobStatus) checkpointTriggered(id checkpoint.ID, kind checkpoint.Kind, at time.Time) {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.history {
		if m.history[i].ID == id { // entered by checkpointAnswered
			m.history[i].Kind, m.history[i].TriggerTime = kind.String(), at
			return
		}
	}
	m.history = append(m.history, CheckpointStats{ID: id, Kind: kind.String(), Status: CheckpointInProgress, TriggerTime: at, Subtasks: m.numTasks})
	if len(m.history) > historySize {
		m.history = append(m.history[:0], m.history[len(m.history)-historySize:]...)
	}
}

// checkpointAnswered enters a requested checkpoint whose id the requester
// is told before its barrier goes out (the JobMaster holds a trigger back
// while a sweep of shared files or an id reservation is in flight): the
// id the caller polls is in the history from the answer on, in progress.
func (s *JobStatus) checkpointAnswered(id checkpoint.ID, at time.Time) {
	m := s.mon()
	m.mu.Lock()
	found := slices.ContainsFunc(m.history, func(c CheckpointStats) bool { return c.ID == id })
	m.mu.Unlock()
	if !found {
		s.checkpointTriggered(id, checkpoint.Periodic, at)
	}
}

// updateCheckpoint applies f to the history entry of id, if still kept.
func (s *JobStatus) updateCheckpoint(id checkpoint.ID, f func(*CheckpointStats)) {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.history {
		if m.history[i].ID == id {
			f(&m.history[i])
		}
	}
}
