package rest

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// Metric is one entry of a metric collection, Flink's shape: the metric's
// id ("<subtask>.<name>" on a vertex) and its value as a string, so a
// Long.MIN_VALUE watermark keeps all its digits in JavaScript.
type Metric struct {
	ID    string `json:"id"`
	Value string `json:"value"`
}

// watermarks answers GET /jobs/{jobid}/vertices/{vertexid}/watermarks as
// Flink does: a JSON array with each running subtask's
// "<subtask>.currentInputWatermark", in milliseconds, ordered by subtask;
// "-9223372036854775808" (Long.MIN_VALUE) before a subtask's first
// watermark, which Flink's dashboard shows as "No Watermark". A vertex with
// no running subtasks (the job is not running) answers an empty array.
// Flink's GET /jobs/{jobid} carries no watermark, so neither does weir's.
func (a *api) watermarks(w http.ResponseWriter, r *http.Request, j Job) {
	id, ok := a.vertex(w, r, j)
	if !ok {
		return
	}
	type sub struct {
		n  int
		wm int64
	}
	var subs []sub
	for _, t := range j.Status().Tasks() {
		if t.Vertex == id {
			subs = append(subs, sub{t.Subtask, t.InputWatermark})
		}
	}
	slices.SortFunc(subs, func(a, b sub) int { return cmp.Compare(a.n, b.n) })
	out := make([]Metric, 0, len(subs))
	for _, s := range subs {
		out = append(out, Metric{ID: strconv.Itoa(s.n) + ".currentInputWatermark", Value: strconv.FormatInt(s.wm, 10)})
	}
	writeJSON(w, http.StatusOK, out)
}

// vertex resolves {vertexid} of job j; an unknown vertex answers 404
// naming the job's vertices, and ok is false.
func (a *api) vertex(w http.ResponseWriter, r *http.Request, j Job) (id int, ok bool) {
	raw := r.PathValue("vertexid")
	id, err := strconv.Atoi(raw)
	var ids []string
	for _, v := range j.Status().Vertices() {
		ids = append(ids, strconv.Itoa(v.ID))
		if err == nil && v.ID == id {
			return id, true
		}
	}
	a.fail(w, r, http.StatusNotFound, fmt.Sprintf("vertex %q of job %q not found; its vertices are %s (GET /jobs/%s lists them)", raw, j.ID(), quoteAll(ids), j.ID()))
	return 0, false
}
