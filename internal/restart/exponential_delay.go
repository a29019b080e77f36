package restart

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/weirstream/weir/internal/config"
)

// ExponentialDelayConfig parameterizes ExponentialDelay; the fields mirror
// the restart-strategy.exponential-delay.* keys.
type ExponentialDelayConfig struct {
	// InitialBackoff is the wait before the first restart (and the first
	// after a reset).
	InitialBackoff time.Duration
	// MaxBackoff caps the wait; it must be >= InitialBackoff.
	MaxBackoff time.Duration
	// Multiplier (>= 1) grows the wait after each consecutive failure.
	Multiplier float64
	// ResetThreshold: a job that runs this long after its last restart
	// without failing starts again from InitialBackoff with a fresh attempt
	// count.
	ResetThreshold time.Duration
	// JitterFactor in [0, 1] moves each wait by a uniformly random amount of
	// up to ± JitterFactor × wait, so many jobs hit by one outage do not
	// restart in step.
	JitterFactor float64
	// AttemptsBeforeReset (>= 1) is how many restarts are allowed between
	// resets; the failure after that fails the job.
	AttemptsBeforeReset int
	// Rand draws the jitter; required when JitterFactor > 0. Seed it for
	// reproducible delays.
	Rand *rand.Rand
}

// Validate reports the first field that is out of range, naming the
// configuration key that sets it.
func (c ExponentialDelayConfig) Validate() error {
	switch {
	case c.InitialBackoff < 0:
		return fmt.Errorf("%s is %v: must be >= 0", config.ExponentialDelayInitialBackoff, c.InitialBackoff)
	case c.MaxBackoff < c.InitialBackoff:
		return fmt.Errorf("%s (%s) is below %s (%s): raise the maximum or lower the initial backoff",
			config.ExponentialDelayMaxBackoff, config.FormatDuration(c.MaxBackoff),
			config.ExponentialDelayInitialBackoff, config.FormatDuration(c.InitialBackoff))
	case !(c.Multiplier >= 1) || math.IsInf(c.Multiplier, 0):
		return fmt.Errorf("%s is %g: must be a finite number >= 1", config.ExponentialDelayBackoffMultiplier, c.Multiplier)
	case c.ResetThreshold < 0:
		return fmt.Errorf("%s is %v: must be >= 0", config.ExponentialDelayResetThreshold, c.ResetThreshold)
	case !(c.JitterFactor >= 0 && c.JitterFactor <= 1):
		return fmt.Errorf("%s is %g: must be between 0 and 1", config.ExponentialDelayJitterFactor, c.JitterFactor)
	case c.AttemptsBeforeReset < 1:
		return fmt.Errorf("%s is %d: must be >= 1", config.ExponentialDelayAttemptsBeforeReset, c.AttemptsBeforeReset)
	case c.JitterFactor > 0 && c.Rand == nil:
		return errors.New("exponential-delay with jitter needs a random source: pass a seeded *rand.Rand")
	}
	return nil
}

// ExponentialDelay waits InitialBackoff before the first restart and
// Multiplier times longer before each consecutive one, up to MaxBackoff.
// Running ResetThreshold without failure resets the wait and the attempt
// count.
type ExponentialDelay struct {
	cfg ExponentialDelayConfig

	attempts    int           // failures since the last reset
	backoff     time.Duration // un-jittered wait of the latest failure
	restartedAt time.Time     // when the latest restart was due (failure time + delay)
	failed      bool
}

// NewExponentialDelay validates cfg and returns the strategy.
func NewExponentialDelay(cfg ExponentialDelayConfig) (*ExponentialDelay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("exponential-delay restart strategy: %w", err)
	}
	return &ExponentialDelay{cfg: cfg}, nil
}

// Name returns "exponential-delay".
func (*ExponentialDelay) Name() string { return config.RestartExpDelay }

// OnFailure grows the backoff, or resets it when the job ran at least
// ResetThreshold since its last restart, and allows the restart unless the
// attempts since the last reset are used up.
func (s *ExponentialDelay) OnFailure(now time.Time) Decision {
	if s.failed {
		return Decision{Reason: s.exhausted()}
	}
	switch {
	case s.attempts == 0:
		s.backoff = s.cfg.InitialBackoff
	case now.Sub(s.restartedAt) >= s.cfg.ResetThreshold:
		// Measured from the restart, not the failure: the wait itself is
		// not time the job spent running.
		s.attempts = 0
		s.backoff = s.cfg.InitialBackoff
	default:
		next := float64(s.backoff) * s.cfg.Multiplier
		if next >= float64(s.cfg.MaxBackoff) {
			s.backoff = s.cfg.MaxBackoff
		} else {
			s.backoff = time.Duration(next)
		}
	}
	s.attempts++
	if s.attempts > s.cfg.AttemptsBeforeReset {
		s.failed = true
		return Decision{Reason: s.exhausted()}
	}
	delay := s.jitter(s.backoff)
	s.restartedAt = now.Add(delay)
	return Decision{Restart: true, Delay: delay,
		Reason: fmt.Sprintf("exponential-delay: attempt %d, backoff %s", s.attempts, config.FormatDuration(s.backoff))}
}

// jitter moves b uniformly within ± JitterFactor × b.
func (s *ExponentialDelay) jitter(b time.Duration) time.Duration {
	if s.cfg.JitterFactor == 0 || b == 0 {
		return b
	}
	span := float64(b) * s.cfg.JitterFactor
	return max(b+time.Duration((2*s.cfg.Rand.Float64()-1)*span), 0)
}

func (s *ExponentialDelay) exhausted() string {
	return fmt.Sprintf("exponential-delay: %d attempts exhausted without %s of failure-free running",
		s.cfg.AttemptsBeforeReset, config.FormatDuration(s.cfg.ResetThreshold))
}
