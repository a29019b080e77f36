package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Memory sizes are KindString options checked by memorySizeAtLeast and
// read with Config.MemorySize, so that the kinds stay as they are.

// memoryUnit returns the multiple of every unit spelling Flink accepts for
// memory sizes; as in Flink the units are binary (1 kb = 1024 bytes) and
// an empty unit means bytes.
func memoryUnit(unit string) (int64, bool) {
	switch unit {
	case "", "b", "bytes":
		return 1, true
	case "k", "kb", "kibibytes":
		return 1 << 10, true
	case "m", "mb", "mebibytes":
		return 1 << 20, true
	case "g", "gb", "gibibytes":
		return 1 << 30, true
	case "t", "tb", "tebibytes":
		return 1 << 40, true
	}
	return 0, false
}

const memoryForm = `a memory size such as "64 mb", "512kb", "1 gb" or a plain integer of bytes`

// ParseMemorySize parses a memory size the way Flink writes them: an
// integer, optional spaces and an optional unit ("64mb", "64 mb", "1g").
func ParseMemorySize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) })
	if i < 0 {
		i = len(t)
	}
	if i == 0 {
		return 0, fmt.Errorf("want %s", memoryForm)
	}
	per, ok := memoryUnit(strings.ToLower(strings.TrimSpace(t[i:])))
	if !ok {
		return 0, fmt.Errorf("unknown unit %q: want %s", strings.TrimSpace(t[i:]), memoryForm)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n > math.MaxInt64/per {
		return 0, fmt.Errorf("memory size %q overflows", s)
	}
	return n * per, nil
}

// memorySizeAtLeast rejects values that do not parse or are below min.
func memorySizeAtLeast(min int64) func(string) error {
	return func(v string) error {
		n, err := ParseMemorySize(v)
		if err != nil {
			return err
		}
		if n < min {
			return fmt.Errorf("must be at least %d bytes", min)
		}
		return nil
	}
}

// MemorySize returns the value of a memory-size key in bytes.
func (c *Config) MemorySize(key string) int64 {
	n, err := ParseMemorySize(c.get(key, KindString))
	if err != nil {
		panic(fmt.Sprintf("config: stored value of %s: %v", key, err))
	}
	return n
}
