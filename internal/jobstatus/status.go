package jobstatus

import (
	"errors"
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
	// state it references (see Sizes). Both are 0 until its
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
	// Time splits the subtask's running time into busy, idle (waiting
	// for input) and backpressured (waiting for output credit), the
	// inputs of the autoscaler's true processing rate.
	Time TaskTime `json:"time"`
	// Gauges are what the task's operators published (connector figures
	// such as a CDC source's replication lag); nil without any.
	Gauges []Gauge `json:"gauges,omitempty"`
	// Async counts the calls of the task's async I/O operators
	// (weir.AsyncMap); nil without one.
	Async *TaskAsyncStats `json:"async,omitempty"`
	// Weak is the subtask's accounting in WEAKLY_CONSISTENT mode (nil in
	// the other modes), over all its attempts.
	Weak *TaskWeakStats `json:"weak,omitempty"`
}

// TaskTime is a subtask's running time split as Flink splits it:
// cumulative figures since the attempt started (Flink's
// accumulated-busy-time and its siblings) and milliseconds per second over
// the latest window of one to two seconds (busyTimeMsPerSecond and its
// siblings; the three sum to 1000 once there is a window, and are all 0
// before it or from a TaskManager too old to measure them).
type TaskTime struct {
	Busy                     time.Duration `json:"accumulated_busy_time"`
	Idle                     time.Duration `json:"accumulated_idle_time"`
	BackPressured            time.Duration `json:"accumulated_backpressured_time"`
	BusyMsPerSecond          int64         `json:"busy_time_ms_per_second"`
	IdleMsPerSecond          int64         `json:"idle_time_ms_per_second"`
	BackPressuredMsPerSecond int64         `json:"backpressured_time_ms_per_second"`
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

// monitor is the part of JobStatus behind a lock: history, state and the
// tasks of the running attempt.
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
	numTasks   int
	// restoreAttempt is the attempt whose restore LastRestoreDuration
	// measures (restore.go).
	restoreAttempt int
	// autoscaler is the autoscaler's latest evaluations, oldest first,
	// at most autoscalerHistory; autoscaling that it runs.
	autoscaler  []AutoscalerDecision
	autoscaling bool
	lastRescale *RescaleRecord
	// reactiveLog is reactive mode's latest decisions, oldest first, at
	// most reactiveHistory; reactive that the job runs in reactive mode.
	reactiveLog []ReactiveDecision
	reactive    bool
}

// ErrNotRunning is returned for commands (Control) a job can serve only
// while an attempt runs.
var ErrNotRunning = errors.New("job is not running")

func (s *JobStatus) mon() *monitor {
	s.once.Do(func() {
		s.m = &monitor{state: StateCreated}
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

// TaskAsyncStats are a task's async I/O figures, summed over its async
// operators, in its current attempt.
type TaskAsyncStats struct {
	// InFlight is the calls running now (at most the capacity per operator).
	InFlight int64 `json:"in_flight"`
	// Timeouts counts calls that did not complete within their timeout.
	Timeouts int64 `json:"timeouts"`
	// Retries counts attempts made after a failed one.
	Retries int64 `json:"retries"`
	// LatencyMean is the mean time of the completed calls, from the first
	// attempt to the completion (retries and backoff included).
	LatencyMean time.Duration `json:"latency_mean_ns"`
}
