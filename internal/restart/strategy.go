package restart

import "time"

// Strategy decides what happens after each job failure.
type Strategy interface {
	// Name is the strategy's restart-strategy.type value, e.g. "fixed-delay".
	Name() string
	// OnFailure records a failure that happened at now and decides whether
	// to restart and after which delay. now must not go backwards between
	// calls.
	OnFailure(now time.Time) Decision
}

// Decision is a strategy's answer to one failure.
type Decision struct {
	// Restart is true when the job should be restarted after Delay.
	Restart bool
	// Delay is the wait before the restart; zero when Restart is false.
	Delay time.Duration
	// Reason explains the decision for logs and the job's failure message,
	// e.g. "fixed-delay: 3 attempts exhausted".
	Reason string
}
