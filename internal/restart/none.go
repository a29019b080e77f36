package restart

import "time"

// None never restarts: the first failure fails the job.
type None struct{}

// NewNone returns the strategy that never restarts.
func NewNone() *None { return &None{} }

// Name returns "none".
func (*None) Name() string { return "none" }

// OnFailure always refuses.
func (*None) OnFailure(time.Time) Decision {
	return Decision{Reason: "none: restarts are disabled (set restart-strategy.type to enable them)"}
}
