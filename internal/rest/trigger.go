package rest

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/weirstream/weir/internal/jobstatus"
)

// TriggerResponse is the 202 body of POST /jobs/{jobid}/checkpoints. As
// Flink's, it names a request to poll at GET
// /jobs/{jobid}/checkpoints/{triggerid}; in weir the request id is the id
// of the triggered checkpoint.
type TriggerResponse struct {
	RequestID string `json:"request-id"`
}

func (a *api) trigger(w http.ResponseWriter, r *http.Request, j Job) {
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.TriggerTimeout)
	defer cancel()
	s := j.Status()
	id, err := j.Control().TriggerCheckpoint(ctx)
	switch {
	case errors.Is(err, jobstatus.ErrNotRunning):
		// A restarting job will take requests again soon; an ended one never.
		code := http.StatusConflict
		if st := s.State(); st == jobstatus.StateRestarting || st == jobstatus.StateCreated || st == jobstatus.StateRunning {
			code = http.StatusServiceUnavailable
		}
		a.fail(w, r, code, "trigger a checkpoint of job "+strconv.Quote(j.ID())+": "+err.Error())
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		a.fail(w, r, http.StatusServiceUnavailable, "trigger a checkpoint of job "+strconv.Quote(j.ID())+": the job did not take the request in time; try again")
	case err != nil:
		// The coordinator refused (e.g. too many checkpoints in progress).
		a.fail(w, r, http.StatusConflict, "trigger a checkpoint of job "+strconv.Quote(j.ID())+": "+err.Error())
	case id == 0:
		a.fail(w, r, http.StatusServiceUnavailable, "trigger a checkpoint of job "+strconv.Quote(j.ID())+": the coordinator took no checkpoint; try again")
	default:
		writeJSON(w, http.StatusAccepted, TriggerResponse{RequestID: strconv.FormatInt(int64(id), 10)})
	}
}

// OperationStatus is the state of an asynchronous operation, Flink's
// {"id": "IN_PROGRESS" | "COMPLETED"}.
type OperationStatus struct {
	ID string `json:"id"`
}

// TriggerOperation is the result of a finished trigger request: the
// checkpoint id, or why it failed.
type TriggerOperation struct {
	CheckpointID int64  `json:"checkpointId"`
	FailureCause string `json:"failure-cause,omitempty"`
}

// TriggerStatus is the body of GET /jobs/{jobid}/checkpoints/{triggerid}.
type TriggerStatus struct {
	Status    OperationStatus   `json:"status"`
	Operation *TriggerOperation `json:"operation,omitempty"`
}

func (a *api) triggerStatus(w http.ResponseWriter, r *http.Request, j Job) {
	c, msg := a.findCheckpoint(j, r.PathValue("triggerid"))
	if msg != "" {
		a.fail(w, r, http.StatusNotFound, msg)
		return
	}
	out := TriggerStatus{Status: OperationStatus{ID: "IN_PROGRESS"}}
	if c.Status != jobstatus.CheckpointInProgress {
		out.Status.ID = "COMPLETED"
		out.Operation = &TriggerOperation{CheckpointID: c.ID, FailureCause: c.FailureMessage}
	}
	writeJSON(w, http.StatusOK, out)
}
