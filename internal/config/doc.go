// Package config holds weir's configuration: a registry of known keys in
// Flink's spelling, each with a kind, a default and a validator, and a
// Config that stores validated values by key.
//
// A Flink user's configuration carries over: the same keys
// (execution.checkpointing.interval, restart-strategy.type, …), the same
// duration notation ("10 s", "1 min", a plain integer meaning milliseconds),
// the same value aliases ("hashmap", "fixeddelay") and both the flat and the
// nested YAML layouts.
//
// Walkthrough:
//
//	c := config.New()                                  // every key at its default
//	err := c.LoadYAML("weir.yaml")                      // file values
//	err = c.SetOverrides([]string{"parallelism.default=4"}) // -D key=value from the CLI
//	every := c.Duration("execution.checkpointing.interval")
//	for _, kv := range c.Entries() { fmt.Println(kv[0], "=", kv[1]) }
//
// Every value is validated when it is set, so the typed getters cannot fail
// on user input; they panic only when code asks for a key that does not exist
// or with the wrong kind, which is a programming error.
//
// Unknown keys are rejected (a typo must not silently fall back to a
// default); the error suggests the closest known key.
//
// Owns: the registry of configuration keys, their defaults and validation.
// Must not touch: anything that uses the values; engines read them through
// typed getters and their own Config structs (checked by
// internal/archtest).
package config
