package rest

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/weirstream/weir/internal/jobstatus"
)

// SubtaskAlignment is a subtask's alignment of one checkpoint, in bytes
// and milliseconds, as Flink names it.
type SubtaskAlignment struct {
	// Buffered is what alignment held back (aligned: records queued in
	// blocked channels when it ended; unaligned: the channel state).
	Buffered int64 `json:"buffered"`
	// Processed is about how many bytes were processed during alignment.
	Processed int64 `json:"processed"`
	// Persisted is the channel state written (unaligned only).
	Persisted int64 `json:"persisted"`
	// Duration is the first barrier to the last.
	Duration int64 `json:"duration"`
}

// SubtaskCheckpointStatistics is one acknowledged subtask of a checkpoint.
type SubtaskCheckpointStatistics struct {
	Index        int    `json:"index"`
	Status       string `json:"status"` // completed: the subtask acknowledged
	AckTimestamp int64  `json:"ack_timestamp"`
	// EndToEndDuration is the trigger to this subtask's acknowledgement.
	EndToEndDuration int64            `json:"end_to_end_duration"`
	Alignment        SubtaskAlignment `json:"alignment"`
	// StartDelay is the trigger to the first barrier reaching the subtask.
	StartDelay          int64 `json:"start_delay"`
	UnalignedCheckpoint bool  `json:"unaligned_checkpoint"`
	// Checkpoint holds the durations of the snapshot's synchronous and
	// asynchronous parts, in milliseconds (Flink's checkpoint.sync/async).
	Checkpoint SubtaskCheckpointDuration `json:"checkpoint"`
}

// SubtaskCheckpointDuration is a subtask snapshot's two parts, in ms.
type SubtaskCheckpointDuration struct {
	Sync  int64 `json:"sync"`
	Async int64 `json:"async"`
}

// TaskCheckpointStatistics is the body of GET
// /jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}:
// one vertex's part of a checkpoint, per acknowledged subtask (subtasks
// that have not acknowledged are not listed).
type TaskCheckpointStatistics struct {
	ID                      int64                         `json:"id"`
	Status                  string                        `json:"status"`
	NumSubtasks             int                           `json:"num_subtasks"`
	NumAcknowledgedSubtasks int                           `json:"num_acknowledged_subtasks"`
	AlignmentBuffered       int64                         `json:"alignment_buffered"`
	ProcessedData           int64                         `json:"processed_data"`
	PersistedData           int64                         `json:"persisted_data"`
	Subtasks                []SubtaskCheckpointStatistics `json:"subtasks"`
}

func (a *api) checkpointSubtasks(w http.ResponseWriter, r *http.Request, j Job) {
	c, msg := a.findCheckpointStats(j, r.PathValue("checkpointid"))
	if msg != "" {
		a.fail(w, r, http.StatusNotFound, msg)
		return
	}
	raw := r.PathValue("vertexid")
	vertex, err := strconv.Atoi(raw)
	var v *jobstatus.VertexInfo
	for _, vi := range j.Status().Vertices() {
		if err == nil && vi.ID == vertex {
			v = &vi
		}
	}
	if v == nil {
		a.fail(w, r, http.StatusNotFound, fmt.Sprintf("job %q has no vertex %q (vertex ids are listed by GET /jobs/%s)", j.ID(), raw, j.ID()))
		return
	}
	out := TaskCheckpointStatistics{ID: int64(c.ID), Status: c.Status, NumSubtasks: v.Parallelism, Subtasks: []SubtaskCheckpointStatistics{}}
	for _, s := range c.SubtaskStats {
		if s.Vertex != vertex {
			continue
		}
		ack := millis(s.AckTime)
		out.NumAcknowledgedSubtasks++
		out.AlignmentBuffered += s.AlignmentBufferedBytes
		out.ProcessedData += s.ProcessedInFlightBytes
		out.PersistedData += s.PersistedInFlightBytes
		out.Subtasks = append(out.Subtasks, SubtaskCheckpointStatistics{
			Index: s.Subtask, Status: "completed", AckTimestamp: ack, EndToEndDuration: max(0, s.AckTime.Sub(c.TriggerTime).Milliseconds()),
			Alignment: SubtaskAlignment{
				Buffered: s.AlignmentBufferedBytes, Processed: s.ProcessedInFlightBytes,
				Persisted: s.PersistedInFlightBytes, Duration: s.AlignmentDuration.Milliseconds(),
			},
			StartDelay: s.StartDelay.Milliseconds(), UnalignedCheckpoint: s.Unaligned,
			Checkpoint: SubtaskCheckpointDuration{Sync: s.SyncDuration.Milliseconds(), Async: s.AsyncDuration.Milliseconds()},
		})
	}
	sort.Slice(out.Subtasks, func(i, k int) bool { return out.Subtasks[i].Index < out.Subtasks[k].Index })
	writeJSON(w, http.StatusOK, out)
}
