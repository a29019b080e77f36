package coordinator

import (
	"errors"
	"fmt"
	"time"
)

// DefaultTimeout is the timeout a zero Config.Timeout stands for, as Flink's
// execution.checkpointing.timeout default.
const DefaultTimeout = 10 * time.Minute

// Config holds the checkpointing options the coordinator enforces. Zero
// values of Timeout and MaxConcurrent mean their defaults, so a Config built
// from a partly filled configuration file is usable as is.
type Config struct {
	// Interval between periodic checkpoints
	// (execution.checkpointing.interval). 0 disables periodic checkpoints;
	// final and on-demand checkpoints still work.
	Interval time.Duration
	// Timeout after which a pending checkpoint that has not collected every
	// acknowledgement is aborted as failed (execution.checkpointing.timeout).
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// MinPause is the least time between the end (completion or failure) of
	// one checkpoint and the trigger of the next periodic one
	// (execution.checkpointing.min-pause). A positive MinPause implies
	// MaxConcurrent 1, as in Flink: a pause between checkpoints cannot be
	// kept while several overlap.
	MinPause time.Duration
	// MaxConcurrent is how many checkpoints may be pending at once
	// (execution.checkpointing.max-concurrent-checkpoints). 0 means 1.
	MaxConcurrent int
	// TolerableFailures is how many consecutive failed checkpoints the job
	// tolerates (execution.checkpointing.tolerable-failed-checkpoints); one
	// more makes the coordinator ask for a failover.
	TolerableFailures int

	// StorageFailureTimeout bounds how long checkpoint storage may fail
	// (every checkpoint failing for a storage cause) before the job fails
	// for good, naming the storage
	// (execution.checkpointing.storage-failure-timeout); 0: never.
	StorageFailureTimeout time.Duration
	// StorageMaxBackoff caps the wait between checkpoint attempts while
	// storage fails; it starts at Interval and doubles
	// (execution.checkpointing.storage-failure-max-backoff). 0 means
	// DefaultStorageMaxBackoff.
	StorageMaxBackoff time.Duration
	// AlertEvery is the least time between two StorageAlerts (0 means
	// DefaultAlertEvery).
	AlertEvery time.Duration
	// TransactionTimeout is the shortest transaction timeout of the job's
	// two-phase-commit sinks (0: none declares one): while storage fails,
	// the job fails once the next attempt, given the checkpoint Timeout to
	// complete, could end after their oldest open transaction outlived it.
	TransactionTimeout time.Duration
}

// Defaults of the storage-failure options.
const (
	DefaultStorageMaxBackoff = 2 * time.Minute
	DefaultAlertEvery        = 30 * time.Second
)

// DefaultConfig returns Flink's defaults: periodic checkpoints disabled, a
// 10 minute timeout, no min pause, one checkpoint at a time, no tolerated
// failures; and weir's for failing storage: a backoff up to 2 minutes,
// alerts at most every 30 s, no bound.
func DefaultConfig() Config {
	return Config{Timeout: DefaultTimeout, MaxConcurrent: 1, StorageMaxBackoff: DefaultStorageMaxBackoff, AlertEvery: DefaultAlertEvery}
}

// Validate reports every invalid option, each naming its configuration key.
func (c Config) Validate() error {
	var errs []error
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("execution.checkpointing.interval must not be negative, got %v (use 0 to disable periodic checkpoints)", c.Interval))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("execution.checkpointing.timeout must be positive, got %v", c.Timeout))
	}
	if c.MinPause < 0 {
		errs = append(errs, fmt.Errorf("execution.checkpointing.min-pause must not be negative, got %v", c.MinPause))
	}
	if c.MaxConcurrent < 0 {
		errs = append(errs, fmt.Errorf("execution.checkpointing.max-concurrent-checkpoints must be at least 1, got %d", c.MaxConcurrent))
	}
	if c.StorageFailureTimeout < 0 {
		errs = append(errs, fmt.Errorf("execution.checkpointing.storage-failure-timeout must not be negative, got %v (0: never fail the job for it)", c.StorageFailureTimeout))
	}
	if c.StorageMaxBackoff < 0 {
		errs = append(errs, fmt.Errorf("execution.checkpointing.storage-failure-max-backoff must not be negative, got %v", c.StorageMaxBackoff))
	}
	if c.TolerableFailures < 0 {
		errs = append(errs, fmt.Errorf("execution.checkpointing.tolerable-failed-checkpoints must not be negative, got %d", c.TolerableFailures))
	}
	return errors.Join(errs...)
}

// withDefaults fills zero values and folds MinPause into MaxConcurrent, so
// the coordinator reads one effective limit.
func (c Config) withDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.StorageMaxBackoff == 0 {
		c.StorageMaxBackoff = DefaultStorageMaxBackoff
	}
	if c.AlertEvery == 0 {
		c.AlertEvery = DefaultAlertEvery
	}
	if c.MaxConcurrent == 0 || c.MinPause > 0 {
		c.MaxConcurrent = 1
	}
	return c
}
