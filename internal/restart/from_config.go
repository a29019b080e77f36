package restart

import (
	"fmt"
	"math/rand/v2"

	"github.com/weirstream/weir/internal/config"
)

// FromConfig builds the strategy that restart-strategy.type names, with its
// restart-strategy.* parameters. As in Flink, when restart-strategy.type is
// not set explicitly and checkpointing is disabled the strategy is none: a
// restart would recompute everything from the start. rnd draws the
// exponential-delay jitter and may be nil only if no jitter is configured.
func FromConfig(c *config.Config, rnd *rand.Rand) (Strategy, error) {
	typ := c.String(config.RestartStrategyType)
	if !c.IsSet(config.RestartStrategyType) && c.Duration(config.CheckpointingInterval) == 0 {
		typ = config.RestartNone
	}
	switch typ {
	case config.RestartNone:
		return NewNone(), nil
	case config.RestartFixed:
		return NewFixedDelay(c.Int(config.FixedDelayAttempts), c.Duration(config.FixedDelayDelay)), nil
	case config.RestartFailRate:
		return NewFailureRate(c.Int(config.FailureRateMaxFailures), c.Duration(config.FailureRateInterval),
			c.Duration(config.FailureRateDelay)), nil
	case config.RestartExpDelay:
		s, err := NewExponentialDelay(ExponentialDelayConfig{
			InitialBackoff:      c.Duration(config.ExponentialDelayInitialBackoff),
			MaxBackoff:          c.Duration(config.ExponentialDelayMaxBackoff),
			Multiplier:          c.Float(config.ExponentialDelayBackoffMultiplier),
			ResetThreshold:      c.Duration(config.ExponentialDelayResetThreshold),
			JitterFactor:        c.Float(config.ExponentialDelayJitterFactor),
			AttemptsBeforeReset: c.Int(config.ExponentialDelayAttemptsBeforeReset),
			Rand:                rnd,
		})
		if err != nil {
			// Not s itself: a nil *ExponentialDelay in a Strategy is not a nil Strategy.
			return nil, err
		}
		return s, nil
	}
	// The config package validates the enum, so only a new strategy added
	// there without a case here gets this far.
	return nil, fmt.Errorf("restart strategy %q is not implemented", typ)
}
