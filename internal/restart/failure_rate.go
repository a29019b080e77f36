package restart

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/config"
)

// FailureRate restarts after a fixed delay as long as no more than
// maxFailures failures fall within any window of length interval; the
// failure that exceeds the rate fails the job.
type FailureRate struct {
	maxFailures int
	interval    time.Duration
	delay       time.Duration
	recent      []time.Time // failures within interval of the latest, oldest first; at most maxFailures+1
	failed      bool
}

// NewFailureRate returns a strategy allowing maxFailures failures (at least
// 1) per interval, each restart after delay.
func NewFailureRate(maxFailures int, interval, delay time.Duration) *FailureRate {
	return &FailureRate{maxFailures: max(maxFailures, 1), interval: interval, delay: max(delay, 0)}
}

// Name returns "failure-rate".
func (*FailureRate) Name() string { return config.RestartFailRate }

// OnFailure counts the failures of the last interval, this one included. A
// failure exactly interval after an earlier one still counts that earlier
// one, as Flink does.
func (s *FailureRate) OnFailure(now time.Time) Decision {
	if s.failed {
		return Decision{Reason: s.exceeded()}
	}
	keep := s.recent[:0]
	for _, t := range s.recent {
		if now.Sub(t) <= s.interval {
			keep = append(keep, t)
		}
	}
	s.recent = append(keep, now)
	if len(s.recent) > s.maxFailures {
		s.failed = true
		return Decision{Reason: s.exceeded()}
	}
	return Decision{Restart: true, Delay: s.delay,
		Reason: fmt.Sprintf("failure-rate: failure %d of at most %d within %s", len(s.recent), s.maxFailures, config.FormatDuration(s.interval))}
}

func (s *FailureRate) exceeded() string {
	return fmt.Sprintf("failure-rate: more than %d failures within %s", s.maxFailures, config.FormatDuration(s.interval))
}
