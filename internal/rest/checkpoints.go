package rest

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/jobstatus"
)

// CheckpointStatistics describes one checkpoint: an entry of the history
// and the body of GET /jobs/{jobid}/checkpoints/details/{checkpointid}.
// Times are milliseconds since the epoch, durations milliseconds.
type CheckpointStatistics struct {
	ID     int64  `json:"id"`
	Status string `json:"status"` // IN_PROGRESS, COMPLETED or FAILED
	// IsSavepoint is false: weir has no savepoints yet.
	IsSavepoint bool `json:"is_savepoint"`
	// CheckpointType is CHECKPOINT (aligned) or UNALIGNED_CHECKPOINT (some
	// subtask snapshotted unaligned), as Flink names them.
	CheckpointType string `json:"checkpoint_type"`
	// Kind is weir's: periodic (interval or on demand) or final (after
	// every source ended).
	Kind             string `json:"kind"`
	TriggerTimestamp int64  `json:"trigger_timestamp"`
	// LatestAckTimestamp is when the checkpoint completed; -1 otherwise.
	LatestAckTimestamp int64 `json:"latest_ack_timestamp"`
	// EndToEndDuration runs from the trigger to completion or failure, or
	// to now while in progress.
	EndToEndDuration int64 `json:"end_to_end_duration"`
	// CheckpointedSize is what this checkpoint persisted itself; StateSize
	// all the state it references. They differ for incremental
	// checkpoints, whose files uploaded by earlier checkpoints count in
	// StateSize only. Both are 0 until the checkpoint's metadata is
	// written.
	CheckpointedSize        int64  `json:"checkpointed_size"`
	StateSize               int64  `json:"state_size"`
	NumSubtasks             int    `json:"num_subtasks"`
	NumAcknowledgedSubtasks int    `json:"num_acknowledged_subtasks"`
	FailureTimestamp        int64  `json:"failure_timestamp,omitempty"`
	FailureMessage          string `json:"failure_message,omitempty"`
	// FailureCause is weir's class of the failure: declined, timeout,
	// storage, registration, task-failure.
	FailureCause string `json:"failure_cause,omitempty"`
	// In-flight data over the acknowledged subtasks, in bytes, as Flink
	// names them: what alignment held back (aligned: records queued in
	// blocked channels when it ended; unaligned: the channel state),
	// about how much was processed during alignment, and how much was
	// persisted as channel state.
	AlignmentBuffered int64 `json:"alignment_buffered"`
	ProcessedData     int64 `json:"processed_data"`
	PersistedData     int64 `json:"persisted_data"`
	// StartDelay (trigger to first barrier) and AlignmentDuration (first
	// to last barrier) are the largest of any subtask, in milliseconds.
	StartDelay        int64 `json:"start_delay"`
	AlignmentDuration int64 `json:"alignment_duration"`
}

// checkpointType is Flink's name of a checkpoint's type.
func checkpointType(unaligned bool) string {
	if unaligned {
		return "UNALIGNED_CHECKPOINT"
	}
	return "CHECKPOINT"
}

func checkpointStats(c jobstatus.CheckpointStats) CheckpointStatistics {
	s := CheckpointStatistics{
		ID: int64(c.ID), Status: c.Status, CheckpointType: checkpointType(c.Unaligned), Kind: c.Kind,
		TriggerTimestamp: millis(c.TriggerTime), LatestAckTimestamp: -1,
		EndToEndDuration: c.Duration.Milliseconds(), CheckpointedSize: c.CheckpointedSize, StateSize: c.StateSize,
		NumSubtasks: c.Subtasks, NumAcknowledgedSubtasks: c.Acknowledged,
		AlignmentBuffered: c.AlignmentBufferedBytes, ProcessedData: c.ProcessedInFlightBytes, PersistedData: c.PersistedInFlightBytes,
		StartDelay: c.StartDelay.Milliseconds(), AlignmentDuration: c.AlignmentDuration.Milliseconds(),
	}
	// In whole milliseconds, so that end == trigger + duration exactly.
	end := s.TriggerTimestamp + s.EndToEndDuration
	switch c.Status {
	case jobstatus.CheckpointCompleted:
		s.LatestAckTimestamp = end
	case jobstatus.CheckpointFailed:
		s.FailureTimestamp, s.FailureMessage, s.FailureCause = end, c.FailureReason, c.FailureCause
	}
	return s
}

// CheckpointCounts are the checkpoint counts of a job. Completed and
// Failed count since the job started; InProgress is from the history.
type CheckpointCounts struct {
	Restored   int64 `json:"restored"`
	Total      int64 `json:"total"`
	InProgress int64 `json:"in_progress"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
}

// RestoredCheckpoint names the checkpoint the running attempt restored.
type RestoredCheckpoint struct {
	ID          int64 `json:"id"`
	IsSavepoint bool  `json:"is_savepoint"`
	// RestoreTimestamp is when the restore began (milliseconds since the
	// epoch); RestoreDuration how long it took, in milliseconds: the
	// slowest subtask's time from its start until its operators had
	// restored their state (0 while still restoring).
	RestoreTimestamp int64 `json:"restore_timestamp"`
	RestoreDuration  int64 `json:"restore_duration"`
}

// LatestCheckpoints are the newest completed and failed checkpoints in
// the history and the one the running attempt restored from; null if none.
type LatestCheckpoints struct {
	Completed *CheckpointStatistics `json:"completed"`
	Savepoint *CheckpointStatistics `json:"savepoint"`
	Failed    *CheckpointStatistics `json:"failed"`
	Restored  *RestoredCheckpoint   `json:"restored"`
}

// MinMaxAvg summarises a quantity over the completed checkpoints of the
// history.
type MinMaxAvg struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
	Avg int64 `json:"avg"`
}

// CheckpointSummary summarises the completed checkpoints of the history.
type CheckpointSummary struct {
	CheckpointedSize  MinMaxAvg `json:"checkpointed_size"`
	StateSize         MinMaxAvg `json:"state_size"`
	EndToEndDuration  MinMaxAvg `json:"end_to_end_duration"`
	AlignmentBuffered MinMaxAvg `json:"alignment_buffered"`
	ProcessedData     MinMaxAvg `json:"processed_data"`
	PersistedData     MinMaxAvg `json:"persisted_data"`
}

// CheckpointingStatistics is the body of GET /jobs/{jobid}/checkpoints.
type CheckpointingStatistics struct {
	Counts  CheckpointCounts       `json:"counts"`
	Summary CheckpointSummary      `json:"summary"`
	Latest  LatestCheckpoints      `json:"latest"`
	History []CheckpointStatistics `json:"history"` // newest first, as Flink
}

func (a *api) checkpoints(w http.ResponseWriter, r *http.Request, j Job) {
	s := j.Status()
	hist := s.Checkpoints(a.cfg.Now())
	out := CheckpointingStatistics{History: make([]CheckpointStatistics, 0, len(hist))}
	var checkpointed, sizes, durations, buffered, processed, persisted []int64
	for i := len(hist) - 1; i >= 0; i-- {
		c := checkpointStats(hist[i])
		out.History = append(out.History, c)
		switch c.Status {
		case jobstatus.CheckpointInProgress:
			out.Counts.InProgress++
		case jobstatus.CheckpointCompleted:
			checkpointed = append(checkpointed, c.CheckpointedSize)
			sizes, durations = append(sizes, c.StateSize), append(durations, c.EndToEndDuration)
			buffered, processed = append(buffered, c.AlignmentBuffered), append(processed, c.ProcessedData)
			persisted = append(persisted, c.PersistedData)
			if out.Latest.Completed == nil {
				out.Latest.Completed = &c
			}
		case jobstatus.CheckpointFailed:
			if out.Latest.Failed == nil {
				out.Latest.Failed = &c
			}
		}
	}
	// The history is short; a completed checkpoint older than all of it
	// still has its id, duration and sizes in the job's counters.
	if id := s.LastCheckpointID.Load(); out.Latest.Completed == nil && id > 0 {
		out.Latest.Completed = &CheckpointStatistics{
			ID: id, Status: jobstatus.CheckpointCompleted, CheckpointType: "CHECKPOINT", TriggerTimestamp: -1, LatestAckTimestamp: -1,
			EndToEndDuration: time.Duration(s.LastCheckpointDuration.Load()).Milliseconds(), CheckpointedSize: s.LastCheckpointSize.Load(), StateSize: s.LastCheckpointFullSize.Load(),
			AlignmentBuffered: s.LastCheckpointAlignmentBuffered.Load(), ProcessedData: s.LastCheckpointProcessedData.Load(),
			PersistedData: s.LastCheckpointPersistedData.Load(),
		}
	}
	if id := s.RestoredCheckpoint.Load(); id > 0 {
		out.Counts.Restored = 1
		out.Latest.Restored = &RestoredCheckpoint{ID: id, RestoreTimestamp: s.LastRestoreTimestamp.Load(),
			RestoreDuration: time.Duration(s.LastRestoreDuration.Load()).Milliseconds()}
	}
	out.Counts.Completed, out.Counts.Failed = s.CompletedCheckpoints.Load(), s.FailedCheckpoints.Load()
	out.Counts.Total = out.Counts.Completed + out.Counts.Failed + out.Counts.InProgress
	out.Summary = CheckpointSummary{
		CheckpointedSize: minMaxAvg(checkpointed), StateSize: minMaxAvg(sizes), EndToEndDuration: minMaxAvg(durations),
		AlignmentBuffered: minMaxAvg(buffered), ProcessedData: minMaxAvg(processed), PersistedData: minMaxAvg(persisted),
	}
	writeJSON(w, http.StatusOK, out)
}

func minMaxAvg(v []int64) MinMaxAvg {
	if len(v) == 0 {
		return MinMaxAvg{}
	}
	m := MinMaxAvg{Min: v[0], Max: v[0]}
	var sum int64
	for _, x := range v {
		m.Min, m.Max = min(m.Min, x), max(m.Max, x)
		sum += x
	}
	m.Avg = sum / int64(len(v))
	return m
}

// findCheckpoint looks checkpoint id up in the job's history.
func (a *api) findCheckpoint(j Job, raw string) (CheckpointStatistics, string) {
	c, msg := a.findCheckpointStats(j, raw)
	if msg != "" {
		return CheckpointStatistics{}, msg
	}
	return checkpointStats(c), ""
}

// findCheckpointStats looks checkpoint id up in the job's history and
// returns the runtime's entry.
func (a *api) findCheckpointStats(j Job, raw string) (jobstatus.CheckpointStats, string) {
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 {
		return jobstatus.CheckpointStats{}, fmt.Sprintf("checkpoint id %q is not a positive integer", raw)
	}
	hist := j.Status().Checkpoints(a.cfg.Now())
	for _, c := range hist {
		if int64(c.ID) == id {
			return c, ""
		}
	}
	kept := "none"
	if len(hist) > 0 {
		kept = fmt.Sprintf("%d to %d", hist[0].ID, hist[len(hist)-1].ID)
	}
	return jobstatus.CheckpointStats{}, fmt.Sprintf("checkpoint %d of job %q is not in its history, which keeps the most recent checkpoints (now %s)", id, j.ID(), kept)
}

func (a *api) checkpointDetails(w http.ResponseWriter, r *http.Request, j Job) {
	c, msg := a.findCheckpoint(j, r.PathValue("checkpointid"))
	if msg != "" {
		a.fail(w, r, http.StatusNotFound, msg)
		return
	}
	writeJSON(w, http.StatusOK, c)
}
