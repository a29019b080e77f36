package config

import (
	"fmt"
	"strconv"
)

// The helpers below build Option.Validate functions. They receive canonical
// values, which the kind's parser has already checked, so a parse error here
// would be a bug in canonicalize and is reported rather than ignored.

// intAtLeast rejects integers below min.
func intAtLeast(min int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		if n < min {
			return fmt.Errorf("must be >= %d", min)
		}
		return nil
	}
}

// intBetween rejects integers outside [lo, hi].
func intBetween(lo, hi int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		if n < lo || n > hi {
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		return nil
	}
}

// floatBetween rejects numbers outside [lo, hi].
func floatBetween(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return err
		}
		if f < lo || f > hi {
			return fmt.Errorf("must be between %g and %g", lo, hi)
		}
		return nil
	}
}

// floatAtLeast rejects numbers below min.
func floatAtLeast(min float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return err
		}
		if f < min {
			return fmt.Errorf("must be >= %g", min)
		}
		return nil
	}
}

// durationPositive rejects a zero duration where zero has no meaning (a
// checkpoint that times out at once).
func durationPositive(v string) error {
	d, err := ParseDuration(v)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("must be > 0")
	}
	return nil
}
