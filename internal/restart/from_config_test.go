package restart

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/config"
)

func TestFromConfig(t *testing.T) {
	cases := []struct {
		name     string
		kvs      []string
		wantName string
		steps    []step
	}{
		{"unset type without checkpointing is none", nil, "none", []step{{0, false, 0, ""}}},
		{"unset type with checkpointing is exponential-delay at Flink's defaults",
			[]string{"execution.checkpointing.interval=10s", "restart-strategy.exponential-delay.jitter-factor=0"},
			"exponential-delay", []step{
				{0, true, time.Second, ""},
				{0, true, 1500 * time.Millisecond, ""},
				{0, true, 2250 * time.Millisecond, ""},
			}},
		{"explicit type without checkpointing is honoured",
			[]string{"restart-strategy.type=fixeddelay", "restart-strategy.fixed-delay.attempts=2", "restart-strategy.fixed-delay.delay=3 s"},
			"fixed-delay", []step{{0, true, 3 * time.Second, ""}, {0, true, 3 * time.Second, ""}, {0, false, 0, "fixed-delay: 2 attempts exhausted"}}},
		{"failure-rate", []string{"restart-strategy=failure-rate", "restart-strategy.failure-rate.max-failures-per-interval=1",
			"restart-strategy.failure-rate.failure-rate-interval=10 s", "restart-strategy.failure-rate.delay=100"},
			"failure-rate", []step{{0, true, 100 * time.Millisecond, ""}, {5 * time.Second, false, 0, "failure-rate: more than 1 failures within 10 s"}}},
		{"explicit none with checkpointing", []string{"execution.checkpointing.interval=1s", "restart-strategy.type=off"},
			"none", []step{{0, false, 0, ""}}},
		{"exponential-delay attempts limit", []string{"restart-strategy.type=exponential-delay",
			"restart-strategy.exponential-delay.attempts-before-reset-backoff=1", "restart-strategy.exponential-delay.jitter-factor=0"},
			"exponential-delay", []step{{0, true, time.Second, ""}, {time.Second, false, 0, "exponential-delay: 1 attempts exhausted without 1 h of failure-free running"}}},
	}
	for _, tc := range cases {
		c := config.New()
		if err := c.SetOverrides(tc.kvs); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		s, err := FromConfig(c, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if s.Name() != tc.wantName {
			t.Errorf("%s: strategy %s; want %s", tc.name, s.Name(), tc.wantName)
		}
		run(t, tc.name, s, tc.steps)
	}
}

func TestFromConfigErrors(t *testing.T) {
	c := config.New()
	if err := c.SetOverrides([]string{"execution.checkpointing.interval=1s"}); err != nil {
		t.Fatal(err)
	}
	s, err := FromConfig(c, nil)
	want := "exponential-delay restart strategy: exponential-delay with jitter needs a random source: pass a seeded *rand.Rand"
	if err == nil || err.Error() != want || s != nil {
		t.Errorf("nil rand with default jitter: %v, %v; want %s", s, err, want)
	}
	if s, err := FromConfig(c, rand.New(rand.NewPCG(1, 2))); err != nil || s.Name() != "exponential-delay" {
		t.Errorf("with rand: %v, %v", s, err)
	}

	c = config.New()
	if err := c.SetOverrides([]string{"restart-strategy.type=exponential-delay",
		"restart-strategy.exponential-delay.initial-backoff=2 min", "restart-strategy.exponential-delay.max-backoff=1 min"}); err != nil {
		t.Fatal(err)
	}
	_, err = FromConfig(c, rand.New(rand.NewPCG(1, 2)))
	want = "exponential-delay restart strategy: restart-strategy.exponential-delay.max-backoff (1 min) is below restart-strategy.exponential-delay.initial-backoff (2 min): raise the maximum or lower the initial backoff"
	if err == nil || err.Error() != want {
		t.Errorf("max < initial: %v; want %s", err, want)
	}
}
