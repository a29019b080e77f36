package config

import (
	"fmt"
	"strings"
)

// SetOverrides applies "key=value" strings, as given with -D on the command
// line (a leading "-D" is tolerated). Later strings win over earlier ones
// for the same key, as on a command line. Nothing is applied unless every
// string is valid.
func (c *Config) SetOverrides(kvs []string) error {
	type kv struct{ k, v string }
	staged := make([]kv, 0, len(kvs))
	for _, s := range kvs {
		t := strings.TrimPrefix(strings.TrimSpace(s), "-D")
		key, value, ok := strings.Cut(t, "=")
		if !ok || strings.TrimSpace(key) == "" {
			return fmt.Errorf("override %q: want key=value, e.g. -D %s=10s", s, CheckpointingInterval)
		}
		k, v, err := c.check(key, value)
		if err != nil {
			return fmt.Errorf("override %q: %w", s, err)
		}
		staged = append(staged, kv{k, v})
	}
	for _, e := range staged {
		c.values[e.k] = e.v
	}
	return nil
}
