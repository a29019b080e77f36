package weir

import (
	"fmt"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/config"
)

// Config holds the engine configuration under Flink's key names, such as
// execution.checkpointing.interval or restart-strategy.type: a value for
// every known key, set explicitly or left at its default. Unknown keys and
// malformed values are rejected with an error naming them; no method
// panics on a key or value. The zero Config holds the defaults, as
// NewConfig's does. A Config is not safe for concurrent use: build it,
// then hand it to NewEnv.
type Config struct {
	c *config.Config // nil in a zero Config until first used (engine)
}

// NewConfig returns a configuration holding the defaults.
func NewConfig() *Config { return &Config{c: config.New()} }

// engine returns the engine configuration, creating it in a zero Config.
func (c *Config) engine() *config.Config {
	if c.c == nil {
		c.c = config.New()
	}
	return c.c
}

// Set validates value for key and stores it in canonical form. key may be
// a deprecated spelling Flink still accepts; the value is stored under the
// current key.
func (c *Config) Set(key, value string) error { return c.engine().Set(key, value) }

// Get returns the effective value of key (set or default) in canonical
// form: durations as "10 s", enums in their canonical case.
func (c *Config) Get(key string) (string, error) {
	v, _, err := c.engine().Lookup(key)
	return v, err
}

// Duration returns the value of a duration key, such as
// CheckpointingInterval.
func (c *Config) Duration(key string) (time.Duration, error) {
	v, err := c.typed(key, config.KindDuration)
	if err != nil {
		return 0, err
	}
	return config.ParseDuration(v)
}

// Int returns the value of an integer key, such as ParallelismDefault.
func (c *Config) Int(key string) (int, error) {
	v, err := c.typed(key, config.KindInt)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// Bool returns the value of a boolean key, such as
// CheckpointingUnaligned.
func (c *Config) Bool(key string) (bool, error) {
	v, err := c.typed(key, config.KindBool)
	if err != nil {
		return false, err
	}
	return v == "true", nil
}

// typed looks key up and checks that it holds values of kind k.
func (c *Config) typed(key string, k config.Kind) (string, error) {
	v, kind, err := c.engine().Lookup(key)
	if err != nil {
		return "", err
	}
	if kind != k {
		return "", fmt.Errorf("configuration key %q holds a %s, not a %s: read it with the getter of its kind, or with Get", key, kind, k)
	}
	return v, nil
}

// IsSet reports whether key was set explicitly rather than left at its
// default; it is false for keys weir does not know.
func (c *Config) IsSet(key string) bool {
	if _, _, err := c.engine().Lookup(key); err != nil {
		return false
	}
	return c.engine().IsSet(key)
}

// LoadYAML sets every key of a YAML configuration file (Flink's
// config.yaml: flat dotted keys, nested maps, or both). The file is
// applied only if every entry is valid; errors name the file and line.
func (c *Config) LoadYAML(path string) error { return c.engine().LoadYAML(path) }

// Explicit returns a copy of the keys set explicitly, with their canonical
// values: what a client sends with a job so that processes with other
// defaults build the same job.
func (c *Config) Explicit() map[string]string { return c.engine().Explicit() }

// Entries returns every key with its effective value in canonical form,
// sorted by key, for printing the configuration a job runs with.
func (c *Config) Entries() [][2]string { return c.engine().Entries() }

// The configuration keys most jobs set. Every key weir knows is
// documented in docs/configuration.md; Config.Set takes any of them.
// (config_keys_test.go keeps these equal to the engine's own names.)
const (
	// ParallelismDefault is the number of subtasks of operators that do
	// not set their own (Stream.Parallelism); an integer, default 1.
	ParallelismDefault = "parallelism.default"
	// MaxParallelism is the number of key groups, the upper bound of any
	// keyed operator's parallelism after a rescale; default 128.
	MaxParallelism = "pipeline.max-parallelism"
	// CheckpointingInterval is the time between checkpoints, such as
	// "10 s"; 0 turns periodic checkpoints off.
	CheckpointingInterval = "execution.checkpointing.interval"
	// CheckpointingMode is EXACTLY_ONCE (aligned barriers) or
	// AT_LEAST_ONCE.
	CheckpointingMode = "execution.checkpointing.mode"
	// CheckpointingTimeout fails a checkpoint that has not completed in
	// this time.
	CheckpointingTimeout = "execution.checkpointing.timeout"
	// CheckpointingUnaligned enables unaligned checkpoints: barriers
	// overtake buffered records, which are stored with the checkpoint.
	CheckpointingUnaligned = "execution.checkpointing.unaligned.enabled"
	// CheckpointsDir is where checkpoints are stored: a local folder, a
	// file:// path or an s3://bucket/prefix URL.
	CheckpointsDir = "state.checkpoints.dir"
	// CheckpointsNumRetained is how many completed checkpoints are kept.
	CheckpointsNumRetained = "state.checkpoints.num-retained"
	// StateBackendType is the keyed state backend: "heap" or "lsm".
	StateBackendType = "state.backend.type"
	// StateBackendIncremental makes the lsm backend's checkpoints
	// incremental.
	StateBackendIncremental = "state.backend.incremental"
	// RestartStrategyType is none, fixed-delay, exponential-delay or
	// failure-rate.
	RestartStrategyType = "restart-strategy.type"
	// BatchSize is the number of records per batch between operators.
	BatchSize = "pipeline.batch-size"
)

// Values of CheckpointingMode, StateBackendType and RestartStrategyType.
const (
	ExactlyOnce = "EXACTLY_ONCE"
	AtLeastOnce = "AT_LEAST_ONCE"
	// WeaklyConsistent takes barrier-free per-task snapshots with
	// single-task failover (docs/weak-consistency.md).
	WeaklyConsistent = "WEAKLY_CONSISTENT"

	HeapStateBackend = "heap"
	LSMStateBackend  = "lsm"

	RestartNone             = "none"
	RestartFixedDelay       = "fixed-delay"
	RestartExponentialDelay = "exponential-delay"
	RestartFailureRate      = "failure-rate"
)
