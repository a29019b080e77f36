package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "weir.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadYAMLFlatNestedAndMixed(t *testing.T) {
	layouts := map[string]string{
		"flat": `
execution.checkpointing.interval: 10 s
execution.checkpointing.mode: at_least_once
restart-strategy.type: fixeddelay
restart-strategy.fixed-delay.attempts: 3
restart-strategy.fixed-delay.delay: 2000
state.backend.type: hashmap
parallelism.default: 4
restart-strategy.exponential-delay.backoff-multiplier: 2
`,
		"nested": `
execution:
  checkpointing:
    interval: 10s
    mode: AT_LEAST_ONCE
restart-strategy:
  type: fixed-delay
  fixed-delay:
    attempts: 3
    delay: 2 s
  exponential-delay:
    backoff-multiplier: 2.0
state:
  backend:
    type: heap
parallelism:
  default: 4
`,
		"mixed and legacy keys": `
execution.checkpointing:
  interval: 10000
  mode: AT_LEAST_ONCE
restart-strategy: fixed-delay
restart-strategy.fixed-delay:
  attempts: 3
  delay: 2 s
restart-strategy.exponential-delay.backoff-multiplier: 2.0
state.backend: hashmap
parallelism.default: 4
`,
	}
	for name, body := range layouts {
		c := New()
		if err := c.LoadYAML(writeFile(t, body)); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := fmt.Sprint(c.Duration(CheckpointingInterval), c.String(CheckpointingMode), c.String(RestartStrategyType),
			c.Int(FixedDelayAttempts), c.Duration(FixedDelayDelay), c.String(StateBackendType), c.Int(ParallelismDefault),
			c.Float(ExponentialDelayBackoffMultiplier))
		if want := fmt.Sprint(10*time.Second, "AT_LEAST_ONCE", "fixed-delay", 3, 2*time.Second, "heap", 4, 2.0); got != want {
			t.Errorf("%s: got %s; want %s", name, got, want)
		}
		set := 0
		for _, kv := range c.Entries() {
			if c.IsSet(kv[0]) {
				set++
			}
		}
		if set != 8 {
			t.Errorf("%s: %d keys set; want 8", name, set)
		}
	}
}

func TestLoadYAMLEmptyFile(t *testing.T) {
	c := New()
	if err := c.LoadYAML(writeFile(t, "# nothing here\n")); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.Entries()) != fmt.Sprint(New().Entries()) {
		t.Fatal("empty file changed the config")
	}
}

func TestLoadYAMLErrors(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"bad yaml", "a: b\n  c: d: e\n", "load config FILE: yaml: line 2: mapping values are not allowed in this context"},
		{"top level list", "- a\n- b\n", "load config FILE: line 1: want a map of keys to values at the top level"},
		{"unknown key", "parallelism.default: 2\nrestart-strategy:\n  typ: none\n", `load config FILE: line 3: unknown configuration key "restart-strategy.typ": did you mean "restart-strategy.type"?`},
		{"bad value", "state:\n  checkpoints:\n    num-retained: 0\n", `load config FILE: line 3: state.checkpoints.num-retained: bad configuration value "0": must be >= 1`},
		{"list value", "state.checkpoints.dir:\n  - a\n  - b\n", "load config FILE: line 1: state.checkpoints.dir: want a single value, not a list"},
		{"null value", "pipeline.batch-size: 5\nparallelism.default:\n", "load config FILE: line 2: parallelism.default has no value; give one or remove the line"},
		{"flat and nested twice", "parallelism.default: 2\nparallelism:\n  default: 3\n", "load config FILE: line 3: parallelism.default is set again (first set at line 1); keep one"},
		{"fallback and key twice", "state.backend: hashmap\nstate.backend.type: heap\n", "load config FILE: line 2: state.backend.type is set again (first set at line 1); keep one"},
	}
	for _, tc := range cases {
		p := writeFile(t, tc.body)
		c := New()
		err := c.LoadYAML(p)
		want := strings.ReplaceAll(tc.want, "FILE", p)
		if err == nil || err.Error() != want {
			t.Errorf("%s: err = %v;\nwant %s", tc.name, err, want)
		}
		if fmt.Sprint(c.Entries()) != fmt.Sprint(New().Entries()) {
			t.Errorf("%s: a bad file changed the config", tc.name)
		}
	}
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	err := New().LoadYAML(missing)
	if want := "load config: open " + missing + ": no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("missing file: err = %v; want %s", err, want)
	}
}
