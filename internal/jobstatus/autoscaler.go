package jobstatus

import (
	"slices"
	"time"
)

// autoscalerHistory bounds the evaluations a job keeps for REST.
const autoscalerHistory = 30

// AutoscalerDecision is one evaluation of the autoscaler's rule with
// every input behind it (GET /jobs/{id}/autoscaler).
type AutoscalerDecision struct {
	At time.Time `json:"at"`
	// Rescale says the job was asked to rescale to the vertices' To;
	// Reason why not, when no vertex was evaluated or none changes;
	// Error what the rescale answered, when it failed.
	Rescale  bool               `json:"rescale"`
	Reason   string             `json:"reason,omitempty"`
	Error    string             `json:"error,omitempty"`
	Vertices []AutoscalerVertex `json:"vertices,omitempty"`
}

// AutoscalerVertex is one vertex's evaluation: the averages over the
// metrics window (records per second, fractions of time), the true
// processing rate per subtask (records in ÷ busy), the target rate, the
// utilization (target ÷ capacity at From) and the outcome with its
// reason. TruePerSubtask is -1 for a vertex that was never busy.
type AutoscalerVertex struct {
	ID             string  `json:"id"`
	From           int     `json:"from"`
	To             int     `json:"to"`
	In             float64 `json:"records_in_per_second"`
	Out            float64 `json:"records_out_per_second"`
	Busy           float64 `json:"busy"`
	Backpressure   float64 `json:"backpressured"`
	Lag            float64 `json:"lag"`
	TruePerSubtask float64 `json:"true_rate_per_subtask"`
	Target         float64 `json:"target_rate"`
	Utilization    float64 `json:"utilization"`
	Why            string  `json:"why"`
}

// SetAutoscaling records that the autoscaler runs for the job.
func (r *Recorder) SetAutoscaling() {
	m := (*JobStatus)(r).mon()
	m.mu.Lock()
	m.autoscaling = true
	m.mu.Unlock()
}

// AutoscalerDecided records an evaluation, keeping the latest
// autoscalerHistory ones, those that rescaled the longest.
func (r *Recorder) AutoscalerDecided(d AutoscalerDecision) {
	m := (*JobStatus)(r).mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.autoscaler = append(m.autoscaler, d)
	for len(m.autoscaler) > autoscalerHistory {
		// Evaluations that rescaled are what a reader looks for: the
		// oldest one that did not goes first.
		i := slices.IndexFunc(m.autoscaler, func(x AutoscalerDecision) bool { return !x.Rescale })
		if i < 0 {
			i = 0
		}
		m.autoscaler = slices.Delete(m.autoscaler, i, i+1)
	}
}

// Autoscaler reports whether the autoscaler runs for the job and its
// latest evaluations, oldest first.
func (s *JobStatus) Autoscaler() (bool, []AutoscalerDecision) {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.autoscaling, append([]AutoscalerDecision(nil), m.autoscaler...)
}
