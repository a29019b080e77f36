package restart

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/config"
)

// FixedDelay restarts a fixed number of times, waiting the same delay before
// each restart; the failure after the last attempt fails the job.
type FixedDelay struct {
	attempts int
	delay    time.Duration
	failures int
}

// NewFixedDelay returns a strategy that allows attempts restarts (negative
// counts as 0), each after delay (negative counts as 0).
func NewFixedDelay(attempts int, delay time.Duration) *FixedDelay {
	return &FixedDelay{attempts: max(attempts, 0), delay: max(delay, 0)}
}

// Name returns "fixed-delay".
func (*FixedDelay) Name() string { return config.RestartFixed }

// OnFailure allows the restart while attempts remain.
func (s *FixedDelay) OnFailure(time.Time) Decision {
	s.failures++
	if s.failures > s.attempts {
		return Decision{Reason: fmt.Sprintf("fixed-delay: %d attempts exhausted", s.attempts)}
	}
	return Decision{Restart: true, Delay: s.delay,
		Reason: fmt.Sprintf("fixed-delay: attempt %d of %d", s.failures, s.attempts)}
}
