package jobstatus

import (
	"slices"
	"time"
)

// reactiveHistory bounds the reactive-mode decisions a job keeps for REST.
const reactiveHistory = 30

// ReactiveDecision is one step of reactive mode's rule (scheduler-mode:
// reactive) with its inputs (GET /jobs/{id}/autoscaler, "reactive").
type ReactiveDecision struct {
	At time.Time `json:"at"`
	// Kind is "scale-up" or "scale-down" (a rescale asked for), "wait"
	// (what the rule now waits for, or why the job stays as it is),
	// "failed" (the rescale asked for failed: Error) or "running" (a run
	// of the job started at Parallelism).
	Kind string `json:"kind"`
	// From and To are the parallelism of a rescale; Parallelism the
	// job's when the step was taken.
	From        int    `json:"from,omitempty"`
	To          int    `json:"to,omitempty"`
	Parallelism int    `json:"parallelism"`
	Slots       int    `json:"slots"`
	Min         int    `json:"min_parallelism"`
	Max         int    `json:"max_parallelism"`
	Why         string `json:"why"`
	Error       string `json:"error,omitempty"`
}

// SetReactive records that the job runs in reactive mode.
func (r *Recorder) SetReactive() {
	m := (*JobStatus)(r).mon()
	m.mu.Lock()
	m.reactive = true
	m.mu.Unlock()
}

// ReactiveDecided records a step, keeping the latest reactiveHistory,
// rescales the longest.
func (r *Recorder) ReactiveDecided(d ReactiveDecision) {
	m := (*JobStatus)(r).mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reactiveLog = append(m.reactiveLog, d)
	for len(m.reactiveLog) > reactiveHistory {
		i := slices.IndexFunc(m.reactiveLog, func(x ReactiveDecision) bool { return x.Kind != "scale-up" && x.Kind != "scale-down" })
		if i < 0 {
			i = 0
		}
		m.reactiveLog = slices.Delete(m.reactiveLog, i, i+1)
	}
}

// Reactive reports whether the job runs in reactive mode and its latest
// decisions, oldest first.
func (s *JobStatus) Reactive() (bool, []ReactiveDecision) {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reactive, append([]ReactiveDecision(nil), m.reactiveLog...)
}
