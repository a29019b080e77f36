package jobstatus

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// TestCheckpointStatsAcknowledged checks how acknowledgements add up:
// bytes sum, durations take the slowest subtask, and an unaligned
// subtask's buffered bytes are its channel state.
func TestCheckpointStatsAcknowledged(t *testing.T) {
	at := time.Unix(2000, 0)
	var c CheckpointStats
	c.acknowledged(checkpoint.TaskState{
		Task: checkpoint.TaskID{Vertex: 1, Subtask: 0},
		Metrics: checkpoint.SubtaskMetrics{
			StartDelayNanos: int64(2 * time.Second), AlignmentNanos: int64(time.Second),
			AlignmentBufferedBytes: 100, ProcessedBytes: 40,
		},
	}, at)
	c.acknowledged(checkpoint.TaskState{
		Task: checkpoint.TaskID{Vertex: 1, Subtask: 1},
		Operators: []checkpoint.OperatorSubtaskState{
			{UID: "head", Channels: &checkpoint.ChannelStateHandle{File: checkpoint.StateFile{Size: 700}}},
			{UID: "tail"},
		},
		Metrics: checkpoint.SubtaskMetrics{
			StartDelayNanos: int64(time.Second), AlignmentNanos: int64(3 * time.Second),
			AlignmentBufferedBytes: 5, // ignored: unaligned holds back what it persists
			ProcessedBytes:         60, Unaligned: true,
		},
	}, at)
	c.acknowledged(checkpoint.TaskState{Task: checkpoint.TaskID{Vertex: 0}}, at) // a source

	if c.Acknowledged != 3 || len(c.SubtaskStats) != 3 {
		t.Fatalf("acknowledged %d, %d subtask entries; want 3 and 3", c.Acknowledged, len(c.SubtaskStats))
	}
	got := [...]int64{c.AlignmentBufferedBytes, c.ProcessedInFlightBytes, c.PersistedInFlightBytes, int64(c.StartDelay), int64(c.AlignmentDuration)}
	want := [...]int64{800, 100, 700, int64(2 * time.Second), int64(3 * time.Second)}
	if got != want {
		t.Errorf("buffered, processed, persisted, start delay, alignment = %v, want %v", got, want)
	}
	if !c.Unaligned {
		t.Error("a checkpoint with an unaligned subtask is not marked unaligned")
	}
	if s := c.SubtaskStats[1]; s.AlignmentBufferedBytes != 700 || s.PersistedInFlightBytes != 700 || s.Subtask != 1 || !s.AckTime.Equal(at) {
		t.Errorf("unaligned subtask stats = %+v, want buffered = persisted = 700", s)
	}
}

// TestCheckpointCompletedPublishesLatest checks that completion keeps the
// in-flight figures as the job's latest and that history copies do not
// share their subtask slices with the live history.
func TestCheckpointCompletedPublishesLatest(t *testing.T) {
	var s JobStatus
	r := RecorderOf(&s)
	t0 := time.Unix(3000, 0)
	r.CheckpointTriggered(4, checkpoint.Periodic, t0)
	r.CheckpointAcknowledged(4, checkpoint.TaskState{Metrics: checkpoint.SubtaskMetrics{AlignmentBufferedBytes: 11, ProcessedBytes: 22}}, t0)
	copied := s.Checkpoints(t0)
	r.CheckpointCompleted(4, time.Second)
	if got := [3]int64{s.LastCheckpointAlignmentBuffered.Load(), s.LastCheckpointProcessedData.Load(), s.LastCheckpointPersistedData.Load()}; got != [3]int64{11, 22, 0} {
		t.Errorf("latest buffered, processed, persisted = %v, want [11 22 0]", got)
	}
	copied[0].SubtaskStats[0].AlignmentBufferedBytes = -1
	if h := s.Checkpoints(t0)[0]; h.Status != CheckpointCompleted || h.Duration != time.Second || h.SubtaskStats[0].AlignmentBufferedBytes != 11 {
		t.Errorf("history entry = %+v, want completed after 1s with its own subtask stats", h)
	}
}
