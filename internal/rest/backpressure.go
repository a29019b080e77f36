package rest

import (
	"cmp"
	"net/http"
	"slices"
)

// Back pressure levels, Flink's names. weir samples a flag per subtask
// (did its output wait for credit since the last look?), so a subtask is
// ok or high, never low.
const (
	levelOK   = "ok"
	levelHigh = "high"
)

// SubtaskBackPressure is one subtask's sampled back pressure.
type SubtaskBackPressure struct {
	Subtask int    `json:"subtask"`
	Level   string `json:"backpressure-level"`
	// Ratio is 1 if the subtask waited for credit since the previous
	// sample, else 0.
	Ratio float64 `json:"ratio"`
}

// VertexBackPressure is the body of GET
// /jobs/{jobid}/vertices/{vertexid}/backpressure.
type VertexBackPressure struct {
	// Status is ok when the subtasks were sampled, deprecated when the
	// vertex has no running subtasks (the job is not running).
	Status       string                `json:"status"`
	Level        string                `json:"backpressure-level"`
	EndTimestamp int64                 `json:"end-timestamp"`
	Subtasks     []SubtaskBackPressure `json:"subtasks"`
}

func (a *api) backpressure(w http.ResponseWriter, r *http.Request, j Job) {
	id, ok := a.vertex(w, r, j)
	if !ok {
		return
	}
	s := j.Status()
	out := VertexBackPressure{Status: "ok", Level: levelOK, EndTimestamp: a.cfg.Now().UnixMilli(), Subtasks: []SubtaskBackPressure{}}
	for _, t := range s.Tasks() {
		if t.Vertex != id {
			continue
		}
		sb := SubtaskBackPressure{Subtask: t.Subtask, Level: levelOK}
		if t.BackPressured {
			sb.Level, sb.Ratio, out.Level = levelHigh, 1, levelHigh
		}
		out.Subtasks = append(out.Subtasks, sb)
	}
	slices.SortFunc(out.Subtasks, func(a, b SubtaskBackPressure) int { return cmp.Compare(a.Subtask, b.Subtask) })
	if len(out.Subtasks) == 0 {
		out.Status = "deprecated"
	}
	writeJSON(w, http.StatusOK, out)
}
