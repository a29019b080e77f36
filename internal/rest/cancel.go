package rest

import (
	"net/http"
	"strconv"
)

// Canceler is implemented by a Job that can be canceled through the API
// (PATCH /jobs/{jobid}?mode=cancel, Flink's call): a local run's job.
// Cancel only requests it; the job ends CANCELED soon after.
type Canceler interface {
	Cancel()
}

func (a *api) cancel(w http.ResponseWriter, r *http.Request, j Job) {
	if mode := r.URL.Query().Get("mode"); mode != "" && mode != "cancel" {
		a.fail(w, r, http.StatusBadRequest, "mode "+strconv.Quote(mode)+": only mode=cancel is supported")
		return
	}
	c, ok := j.(Canceler)
	if !ok {
		a.fail(w, r, http.StatusMethodNotAllowed, "job "+strconv.Quote(j.ID())+" cannot be canceled through this API; cancel it with the JobManager's rpc address (cancel --jobmanager)")
		return
	}
	c.Cancel()
	writeJSON(w, http.StatusAccepted, struct{}{})
}
