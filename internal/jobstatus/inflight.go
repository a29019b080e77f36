package jobstatus

import (
	"slices"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// This file gathers what a checkpoint did with in-flight data, from the
// subtasks' acknowledgements: how long barriers travelled and aligned, how
// much data alignment held back, and how much an unaligned checkpoint
// persisted as channel state.

// SubtaskCheckpointStats is one subtask's part of a checkpoint, from its
// acknowledgement (Flink's per-subtask checkpoint statistics).
type SubtaskCheckpointStats struct {
	Vertex  int       `json:"vertex"`
	Subtask int       `json:"subtask"`
	AckTime time.Time `json:"ack_timestamp"`
	// StartDelay is trigger to the first barrier reaching the subtask.
	StartDelay time.Duration `json:"start_delay"`
	// AlignmentDuration is the first barrier to the last, over the
	// subtask's input channels.
	AlignmentDuration time.Duration `json:"alignment_duration"`
	// AlignmentBufferedBytes is what alignment held back: aligned, the
	// encoded records queued in blocked channels when it ended; unaligned,
	// the channel state persisted.
	AlignmentBufferedBytes int64 `json:"alignment_buffered"`
	// ProcessedInFlightBytes approximates the bytes processed during
	// alignment.
	ProcessedInFlightBytes int64 `json:"processed_data"`
	// PersistedInFlightBytes is the size of the subtask's channel-state
	// file (unaligned only).
	PersistedInFlightBytes int64 `json:"persisted_data"`
	Unaligned              bool  `json:"unaligned_checkpoint"`
	// SyncDuration and AsyncDuration are the synchronous and asynchronous
	// parts of the subtask's snapshot.
	SyncDuration  time.Duration `json:"sync_duration"`
	AsyncDuration time.Duration `json:"async_duration"`
}

// subtaskStats reads a subtask's acknowledgement.
func subtaskStats(st checkpoint.TaskState, at time.Time) SubtaskCheckpointStats {
	m := st.Metrics
	s := SubtaskCheckpointStats{
		Vertex: st.Task.Vertex, Subtask: st.Task.Subtask, AckTime: at,
		StartDelay:             time.Duration(m.StartDelayNanos),
		AlignmentDuration:      time.Duration(m.AlignmentNanos),
		AlignmentBufferedBytes: m.AlignmentBufferedBytes,
		ProcessedInFlightBytes: m.ProcessedBytes,
		Unaligned:              m.Unaligned,
		SyncDuration:           time.Duration(m.SyncNanos),
		AsyncDuration:          time.Duration(m.AsyncNanos),
	}
	for _, os := range st.Operators {
		if os.Channels != nil {
			s.PersistedInFlightBytes += os.Channels.File.Size
		}
	}
	if m.Unaligned {
		// What an unaligned checkpoint holds back it writes down.
		s.AlignmentBufferedBytes = s.PersistedInFlightBytes
	}
	return s
}

// acknowledged adds a subtask's acknowledgement to the checkpoint's
// statistics: bytes add up, durations take the slowest subtask.
func (c *CheckpointStats) acknowledged(st checkpoint.TaskState, at time.Time) {
	s := subtaskStats(st, at)
	c.Acknowledged++
	c.AlignmentBufferedBytes += s.AlignmentBufferedBytes
	c.ProcessedInFlightBytes += s.ProcessedInFlightBytes
	c.PersistedInFlightBytes += s.PersistedInFlightBytes
	c.StartDelay = max(c.StartDelay, s.StartDelay)
	c.AlignmentDuration = max(c.AlignmentDuration, s.AlignmentDuration)
	c.Unaligned = c.Unaligned || s.Unaligned
	c.SubtaskStats = append(c.SubtaskStats, s)
}

// CheckpointCompleted records the completion of checkpoint id after d,
// and its in-flight figures as the job's latest.
func (r *Recorder) CheckpointCompleted(id checkpoint.ID, d time.Duration) {
	r.updateCheckpoint(id, func(c *CheckpointStats) {
		c.Status, c.Duration = CheckpointCompleted, d
		r.LastCheckpointAlignmentBuffered.Store(c.AlignmentBufferedBytes)
		r.LastCheckpointProcessedData.Store(c.ProcessedInFlightBytes)
		r.LastCheckpointPersistedData.Store(c.PersistedInFlightBytes)
	})
}

// cloneSubtasks gives a history copy its own subtask slice, so readers
// never share one with the JobManager loop's appends.
func cloneSubtasks(hist []CheckpointStats) {
	for i := range hist {
		hist[i].SubtaskStats = slices.Clone(hist[i].SubtaskStats)
	}
}
