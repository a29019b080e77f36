package rest

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/weirstream/weir/internal/jobstatus"
)

// ParallelismBounds is Flink's JobResourceRequirements entry: the range a
// vertex may run at. weir runs a rescaled vertex at its upper bound (a
// local run has every slot it asks for); the lower bound must lie in
// 1..upperBound.
type ParallelismBounds struct {
	LowerBound int `json:"lowerBound"`
	UpperBound int `json:"upperBound"`
}

// ResourceRequirement is one vertex's entry of ResourceRequirements.
type ResourceRequirement struct {
	Parallelism ParallelismBounds `json:"parallelism"`
}

// ResourceRequirements is the body of GET and PUT
// /jobs/{jobid}/resource-requirements, in Flink's shape: keyed by vertex
// id. A PUT may also key an entry by the uid of an operator (its whole
// chain), or by "*": every vertex whose parallelism follows the job's
// default.
type ResourceRequirements map[string]ResourceRequirement

// RescaleResponse answers a PUT: the final checkpoint the job stopped on
// and the parallelism of each vertex it now deploys, by name.
type RescaleResponse struct {
	Checkpoint  int64          `json:"checkpoint"`
	Parallelism map[string]int `json:"parallelism"`
}

// resourceRequirements answers the running vertices' parallelisms.
func (a *api) resourceRequirements(w http.ResponseWriter, r *http.Request, j Job) {
	out := ResourceRequirements{}
	for _, v := range j.Status().Vertices() {
		out[strconv.Itoa(v.ID)] = ResourceRequirement{ParallelismBounds{LowerBound: 1, UpperBound: v.Parallelism}}
	}
	writeJSON(w, http.StatusOK, out)
}

// rescale rescales the job in place (jobstatus.Rescaler) and answers once
// its final checkpoint completed and it is being deployed again.
func (a *api) rescale(w http.ResponseWriter, r *http.Request, j Job) {
	var req ResourceRequirements
	if err := decodeBody(r, &req); err != nil || len(req) == 0 {
		msg := "empty"
		if err != nil {
			msg = err.Error()
		}
		a.fail(w, r, http.StatusBadRequest, `rescale: send {"<vertex id, operator uid or *>": {"parallelism": {"lowerBound": 1, "upperBound": N}}, …}: `+msg)
		return
	}
	rs := jobstatus.Rescale{Vertices: map[string]int{}, ByVertex: map[int]int{}}
	for key, v := range req {
		b := v.Parallelism
		if b.UpperBound < 1 || b.LowerBound < 0 || b.LowerBound > b.UpperBound {
			a.fail(w, r, http.StatusBadRequest, "rescale: "+strconv.Quote(key)+": parallelism bounds "+strconv.Itoa(b.LowerBound)+".."+strconv.Itoa(b.UpperBound)+" are not 0 ≤ lowerBound ≤ upperBound with upperBound ≥ 1")
			return
		}
		if key == "*" {
			rs.Parallelism = b.UpperBound
		} else if id, err := strconv.Atoi(key); err == nil {
			rs.ByVertex[id] = b.UpperBound
		} else {
			rs.Vertices[key] = b.UpperBound
		}
	}
	c, ok := j.Control().(jobstatus.Rescaler)
	if !ok {
		a.fail(w, r, http.StatusNotImplemented, "rescale of job "+strconv.Quote(j.ID())+": this deployment cannot rescale a job in place; stop it with a savepoint and submit it again at the new parallelism")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), savepointTimeout)
	defer cancel()
	res, err := c.Rescale(ctx, rs)
	switch {
	case errors.Is(err, jobstatus.ErrNotRunning):
		a.fail(w, r, http.StatusConflict, "rescale of job "+strconv.Quote(j.ID())+": "+err.Error())
	case err != nil:
		a.fail(w, r, http.StatusBadRequest, "rescale of job "+strconv.Quote(j.ID())+": "+err.Error())
	default:
		writeJSON(w, http.StatusOK, RescaleResponse{Checkpoint: int64(res.Checkpoint), Parallelism: res.Parallelism})
	}
}

// AutoscalerInfo answers GET /jobs/{jobid}/autoscaler: whether the
// autoscaler runs for the job and its latest evaluations, oldest first,
// each with the inputs behind it.
type AutoscalerInfo struct {
	Enabled   bool                           `json:"enabled"`
	Rescales  int64                          `json:"rescales"`
	Decisions []jobstatus.AutoscalerDecision `json:"decisions"`
	// Reactive is set when the JobManager runs the job in reactive mode
	// (scheduler-mode: reactive): its rescales and latest decisions.
	Reactive *ReactiveInfo `json:"reactive,omitempty"`
	// LastRescale is the latest in-place rescale carried out (by the
	// autoscaler, reactive mode or a request) with its pause: from the
	// request until every task ran at the new parallelism.
	LastRescale *jobstatus.RescaleRecord `json:"last_rescale,omitempty"`
}

// ReactiveInfo is reactive mode's part of AutoscalerInfo: the rescales it
// carried out and its latest decisions, oldest first, each with the
// slots and bounds behind it.
type ReactiveInfo struct {
	Rescales  int64                        `json:"rescales"`
	Decisions []jobstatus.ReactiveDecision `json:"decisions"`
}

func (a *api) autoscaler(w http.ResponseWriter, r *http.Request, j Job) {
	on, ds := j.Status().Autoscaler()
	if ds == nil {
		ds = []jobstatus.AutoscalerDecision{}
	}
	info := AutoscalerInfo{Enabled: on, Rescales: j.Status().AutoscalerRescales.Load(), Decisions: ds, LastRescale: j.Status().LastRescale()}
	if on, rd := j.Status().Reactive(); on {
		if rd == nil {
			rd = []jobstatus.ReactiveDecision{}
		}
		info.Reactive = &ReactiveInfo{Rescales: j.Status().ReactiveRescales.Load(), Decisions: rd}
	}
	writeJSON(w, http.StatusOK, info)
}
