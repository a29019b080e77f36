package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// unitLength returns the length of every unit spelling Flink accepts. An
// empty unit means milliseconds, as in Flink.
func unitLength(unit string) (time.Duration, bool) {
	switch unit {
	case "ns", "nano", "nanos", "nanosecond", "nanoseconds":
		return time.Nanosecond, true
	case "us", "µs", "micro", "micros", "microsecond", "microseconds":
		return time.Microsecond, true
	case "", "ms", "milli", "millis", "millisecond", "milliseconds":
		return time.Millisecond, true
	case "s", "sec", "secs", "second", "seconds":
		return time.Second, true
	case "m", "min", "mins", "minute", "minutes":
		return time.Minute, true
	case "h", "hour", "hours":
		return time.Hour, true
	case "d", "day", "days":
		return 24 * time.Hour, true
	}
	return 0, false
}

// durationForm is the expected form quoted in error messages.
const durationForm = `a duration such as "100 ms", "10 s", "5 min", "2 h", "1 d" or a plain integer of milliseconds`

// ParseDuration parses a duration the way Flink writes them: an integer,
// optional spaces, and an optional unit ("100ms", "10 s", "1min", "5 min",
// "2h", "1d"); a plain integer is milliseconds. Go's compound form
// ("1m30s", "1.5s") is accepted too, since Go users will type it. Negative
// durations are rejected: no weir option means anything by them.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty duration: want %s", durationForm)
	}
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("negative duration %q: durations must be >= 0", s)
	}
	i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) })
	if i < 0 {
		i = len(t)
	}
	if i > 0 {
		unit := strings.ToLower(strings.TrimSpace(t[i:]))
		if per, ok := unitLength(unit); ok {
			n, err := strconv.ParseInt(t[:i], 10, 64)
			if err != nil || n > math.MaxInt64/int64(per) {
				return 0, fmt.Errorf("duration %q overflows (max about 292 years)", s)
			}
			return time.Duration(n) * per, nil
		}
	}
	if d, err := time.ParseDuration(t); err == nil {
		return d, nil
	}
	return 0, fmt.Errorf("bad duration %q: want %s", s, durationForm)
}

// FormatDuration writes d in the largest unit that divides it exactly, in
// Flink's notation ("10 s", "5 min", "0 ms"), so printed values read back
// with ParseDuration and look like Flink's documentation.
func FormatDuration(d time.Duration) string {
	units := []struct {
		name string
		len  time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"min", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}}
	if d == 0 {
		return "0 ms"
	}
	for _, u := range units {
		if d%u.len == 0 {
			return fmt.Sprintf("%d %s", d/u.len, u.name)
		}
	}
	return fmt.Sprintf("%d ns", int64(d))
}
