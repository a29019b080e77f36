package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrUnknownKey is wrapped by errors about keys weir does not know.
var ErrUnknownKey = errors.New("unknown configuration key")

// ErrBadValue is wrapped by errors about values that do not parse or
// validate for their key.
var ErrBadValue = errors.New("bad configuration value")

// Config holds a value for every known key: the ones set explicitly and the
// defaults of the rest. It is not safe for concurrent mutation; build it at
// start-up and then only read it.
type Config struct {
	opts     map[string]Option // by canonical key
	fallback map[string]string // fallback key -> canonical key
	defaults map[string]string // canonical default by key
	values   map[string]string // canonical value of each explicitly set key
}

// New returns a Config with every key at its default.
func New() *Config {
	c := &Config{
		opts:     map[string]Option{},
		fallback: map[string]string{},
		defaults: map[string]string{},
		values:   map[string]string{},
	}
	for _, o := range Options() {
		c.opts[o.Key] = o
		for _, fk := range o.FallbackKeys {
			c.fallback[fk] = o.Key
		}
		v, err := canonicalize(o, o.Default)
		if err != nil {
			// The registry is code; TestDefaultsValidate keeps this unreachable.
			panic(fmt.Sprintf("config: default of %s: %v", o.Key, err))
		}
		c.defaults[o.Key] = v
	}
	return c
}

// Set validates value for key and stores it. key may be a fallback spelling;
// the value is stored under the canonical key.
func (c *Config) Set(key, value string) error {
	k, v, err := c.check(key, value)
	if err != nil {
		return err
	}
	c.values[k] = v
	return nil
}

// check resolves key and canonicalizes value without changing c, so that
// loaders can validate a whole file before applying any of it.
func (c *Config) check(key, value string) (canonicalKey, canonicalValue string, err error) {
	k, err := c.resolve(key)
	if err != nil {
		return "", "", err
	}
	o := c.opts[k]
	v, err := canonicalize(o, value)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w %q: %v", key, ErrBadValue, value, err)
	}
	return k, v, nil
}

// resolve maps a key or fallback key to the canonical key.
func (c *Config) resolve(key string) (string, error) {
	key = strings.TrimSpace(key)
	if _, ok := c.opts[key]; ok {
		return key, nil
	}
	if k, ok := c.fallback[key]; ok {
		return k, nil
	}
	if s := c.suggest(key); s != "" {
		return "", fmt.Errorf("%w %q: did you mean %q?", ErrUnknownKey, key, s)
	}
	return "", fmt.Errorf("%w %q: no known key is close; check the spelling against the documented keys", ErrUnknownKey, key)
}

// canonicalize parses raw by the option's kind, returns its canonical
// spelling and applies the option's validator.
func canonicalize(o Option, raw string) (string, error) {
	s := strings.TrimSpace(raw)
	var v string
	switch o.Kind {
	case KindString:
		v = s
	case KindDuration:
		d, err := ParseDuration(s)
		if err != nil {
			return "", err
		}
		v = FormatDuration(d)
	case KindInt:
		n, err := strconv.Atoi(s)
		if err != nil {
			return "", fmt.Errorf("want an integer")
		}
		v = strconv.Itoa(n)
	case KindBool:
		switch strings.ToLower(s) {
		case "true":
			v = "true"
		case "false":
			v = "false"
		default:
			return "", fmt.Errorf(`want "true" or "false"`)
		}
	case KindFloat:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return "", fmt.Errorf("want a finite number such as 1.5")
		}
		v = strconv.FormatFloat(f, 'g', -1, 64)
	case KindEnum:
		l := strings.ToLower(s)
		for _, e := range o.Enum {
			if strings.ToLower(e) == l {
				v = e
			}
		}
		if a, ok := o.ValueAliases[l]; ok {
			v = a
		}
		if v == "" {
			return "", fmt.Errorf("want one of %s", strings.Join(o.Enum, ", "))
		}
	default:
		return "", fmt.Errorf("option has unknown kind %d", o.Kind)
	}
	if o.Validate != nil {
		if err := o.Validate(v); err != nil {
			return "", err
		}
	}
	return v, nil
}

// get returns the canonical value of key, which must exist and be of kind
// k; anything else is a programming error.
func (c *Config) get(key string, k Kind) string {
	ck := key
	if f, ok := c.fallback[key]; ok {
		ck = f
	}
	o, ok := c.opts[ck]
	if !ok {
		panic(fmt.Sprintf("config: unknown key %q (a bug in the caller: use the key constants)", key))
	}
	if o.Kind != k && !(k == KindString && o.Kind == KindEnum) {
		panic(fmt.Sprintf("config: key %q is a %s, not a %s", key, o.Kind, k))
	}
	if v, ok := c.values[ck]; ok {
		return v
	}
	return c.defaults[ck]
}

// Duration returns the value of a KindDuration key.
func (c *Config) Duration(key string) time.Duration {
	d, err := ParseDuration(c.get(key, KindDuration))
	if err != nil {
		panic(fmt.Sprintf("config: stored value of %s: %v", key, err))
	}
	return d
}

// Int returns the value of a KindInt key.
func (c *Config) Int(key string) int {
	n, err := strconv.Atoi(c.get(key, KindInt))
	if err != nil {
		panic(fmt.Sprintf("config: stored value of %s: %v", key, err))
	}
	return n
}

// Bool returns the value of a KindBool key.
func (c *Config) Bool(key string) bool {
	return c.get(key, KindBool) == "true"
}

// Float returns the value of a KindFloat key.
func (c *Config) Float(key string) float64 {
	f, err := strconv.ParseFloat(c.get(key, KindFloat), 64)
	if err != nil {
		panic(fmt.Sprintf("config: stored value of %s: %v", key, err))
	}
	return f
}

// String returns the value of a KindString key, or the canonical value of a
// KindEnum key.
func (c *Config) String(key string) string {
	return c.get(key, KindString)
}

// IsSet reports whether key was set explicitly rather than left at its
// default. Like the getters it panics on an unknown key.
func (c *Config) IsSet(key string) bool {
	ck := key
	if f, ok := c.fallback[key]; ok {
		ck = f
	}
	if _, ok := c.opts[ck]; !ok {
		panic(fmt.Sprintf("config: unknown key %q (a bug in the caller: use the key constants)", key))
	}
	_, ok := c.values[ck]
	return ok
}

// Entries returns every key with its effective value (set or default) in
// canonical form, sorted by key, for printing the configuration a job runs
// with.
func (c *Config) Entries() [][2]string {
	keys := make([]string, 0, len(c.opts))
	for k := range c.opts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][2]string, len(keys))
	for i, k := range keys {
		v, ok := c.values[k]
		if !ok {
			v = c.defaults[k]
		}
		out[i] = [2]string{k, v}
	}
	return out
}

// Explicit returns the explicitly set keys with their canonical values:
// what a client sends with a job (deployment.JobSpec.Config), so that a
// process with other defaults still builds the same job. The map is a
// copy.
func (c *Config) Explicit() map[string]string {
	out := make(map[string]string, len(c.values))
	for k, v := range c.values {
		out[k] = v
	}
	return out
}
