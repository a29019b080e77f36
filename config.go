package weir

import "github.com/weirstream/weir/internal/config"

// Config holds the engine configuration under Flink's key names, such as
// execution.checkpointing.interval or restart-strategy.type. Unknown keys
// and malformed values are rejected with an error naming them.
type Config = config.Config

// NewConfig returns a configuration holding the defaults.
func NewConfig() *Config { return config.New() }
