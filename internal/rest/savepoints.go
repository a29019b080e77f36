package rest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/runtime"
)

// savepointTimeout bounds how long a savepoint or stop request waits for
// its checkpoint to complete and be copied.
const savepointTimeout = 10 * time.Minute

// SavepointRequest is the body of POST /jobs/{jobid}/savepoints (Flink's
// field names).
type SavepointRequest struct {
	TargetDirectory string `json:"target-directory"`
	// CancelJob stops the job after the savepoint (Flink's cancel-job;
	// weir stops gracefully, committing the sinks).
	CancelJob bool `json:"cancel-job"`
}

// StopRequest is the body of POST /jobs/{jobid}/stop (Flink's field name).
type StopRequest struct {
	TargetDirectory string `json:"targetDirectory"`
}

// SavepointOperation is the result of a savepoint: where it was written.
type SavepointOperation struct {
	Location     string `json:"location,omitempty"`
	FailureCause string `json:"failure-cause,omitempty"`
}

// SavepointStatus is the response of the savepoint and stop endpoints.
// Unlike Flink, weir answers when the savepoint is done (status
// COMPLETED, with its location), instead of returning a request id to poll.
type SavepointStatus struct {
	Status    OperationStatus    `json:"status"`
	Operation SavepointOperation `json:"operation"`
}

func (a *api) savepoint(w http.ResponseWriter, r *http.Request, j Job) {
	var req SavepointRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.TargetDirectory == "" {
		a.fail(w, r, http.StatusBadRequest, `savepoint: send {"target-directory": "DIR"} (and optionally "cancel-job": true)`)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), savepointTimeout)
	defer cancel()
	var path string
	var err error
	if req.CancelJob {
		path, err = j.Status().StopWithSavepoint(ctx, req.TargetDirectory)
	} else {
		path, err = j.Status().TriggerSavepoint(ctx, req.TargetDirectory)
	}
	a.savepointResult(w, r, j, "savepoint", path, err)
}

func (a *api) stop(w http.ResponseWriter, r *http.Request, j Job) {
	var req StopRequest
	if r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			a.fail(w, r, http.StatusBadRequest, `stop: send {"targetDirectory": "DIR"} for a final savepoint, or {} to stop without one`)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), savepointTimeout)
	defer cancel()
	path, err := j.Status().StopWithSavepoint(ctx, req.TargetDirectory)
	a.savepointResult(w, r, j, "stop", path, err)
}

func (a *api) savepointResult(w http.ResponseWriter, r *http.Request, j Job, what, path string, err error) {
	switch {
	case errors.Is(err, runtime.ErrNotRunning):
		a.fail(w, r, http.StatusConflict, what+" of job "+strconv.Quote(j.ID())+": "+err.Error())
	case err != nil:
		writeJSON(w, http.StatusOK, SavepointStatus{Status: OperationStatus{ID: "FAILED"}, Operation: SavepointOperation{FailureCause: err.Error()}})
	default:
		writeJSON(w, http.StatusOK, SavepointStatus{Status: OperationStatus{ID: "COMPLETED"}, Operation: SavepointOperation{Location: path}})
	}
}
