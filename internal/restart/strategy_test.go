package restart

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// step is one failure at offset at and the decision expected for it.
type step struct {
	at      time.Duration
	restart bool
	delay   time.Duration
	reason  string // checked only when non-empty
}

func run(t *testing.T, name string, s Strategy, steps []step) {
	t.Helper()
	for i, st := range steps {
		d := s.OnFailure(t0.Add(st.at))
		if d.Restart != st.restart || d.Delay != st.delay || (st.reason != "" && d.Reason != st.reason) {
			t.Errorf("%s: failure %d at +%v: got %+v; want restart=%v delay=%v reason=%q",
				name, i+1, st.at, d, st.restart, st.delay, st.reason)
		}
	}
}

func mustExp(t *testing.T, c ExponentialDelayConfig) *ExponentialDelay {
	t.Helper()
	s, err := NewExponentialDelay(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStrategies(t *testing.T) {
	const s, min, h = time.Second, time.Minute, time.Hour
	exp := func(initial, maxB time.Duration, mult float64, reset time.Duration, attempts int) ExponentialDelayConfig {
		return ExponentialDelayConfig{InitialBackoff: initial, MaxBackoff: maxB, Multiplier: mult, ResetThreshold: reset, AttemptsBeforeReset: attempts}
	}
	cases := []struct {
		name  string
		s     func() Strategy
		steps []step
	}{
		{"none", func() Strategy { return NewNone() }, []step{
			{0, false, 0, "none: restarts are disabled (set restart-strategy.type to enable them)"},
			{h, false, 0, ""},
		}},
		{"fixed-delay 3 x 10s", func() Strategy { return NewFixedDelay(3, 10*s) }, []step{
			{0, true, 10 * s, "fixed-delay: attempt 1 of 3"},
			{20 * s, true, 10 * s, ""},
			{h, true, 10 * s, "fixed-delay: attempt 3 of 3"},
			{2 * h, false, 0, "fixed-delay: 3 attempts exhausted"},
			{200 * h, false, 0, "fixed-delay: 3 attempts exhausted"},
		}},
		{"fixed-delay 0 attempts", func() Strategy { return NewFixedDelay(0, s) }, []step{
			{0, false, 0, "fixed-delay: 0 attempts exhausted"},
		}},
		{"failure-rate 2 per min", func() Strategy { return NewFailureRate(2, min, 5*s) }, []step{
			{0, true, 5 * s, "failure-rate: failure 1 of at most 2 within 1 min"},
			{30 * s, true, 5 * s, "failure-rate: failure 2 of at most 2 within 1 min"},
			{61 * s, true, 5 * s, "failure-rate: failure 2 of at most 2 within 1 min"}, // 0 has left the window
			{89 * s, false, 0, "failure-rate: more than 2 failures within 1 min"},
			{10 * h, false, 0, "failure-rate: more than 2 failures within 1 min"},
		}},
		{"failure-rate window is inclusive", func() Strategy { return NewFailureRate(1, min, 0) }, []step{
			{0, true, 0, ""},
			{min + time.Millisecond, true, 0, ""},
			{2*min + time.Millisecond, false, 0, "failure-rate: more than 1 failures within 1 min"},
		}},
		{"exponential-delay doubles to max, resets after threshold", func() Strategy {
			return mustExp(t, exp(s, 10*s, 2, min, 100))
		}, []step{
			{0, true, s, "exponential-delay: attempt 1, backoff 1 s"},
			{2 * s, true, 2 * s, ""},                                        // restarted at 1s, ran 1s
			{5 * s, true, 4 * s, ""},                                        // restarted at 4s
			{10 * s, true, 8 * s, ""},                                       // restarted at 9s
			{19 * s, true, 10 * s, ""},                                      // 16s capped at 10s
			{30 * s, true, 10 * s, ""},                                      // restarted at 29s
			{100 * s, true, s, "exponential-delay: attempt 1, backoff 1 s"}, // restarted at 40s, ran exactly 1 min: reset
			{101*s + 500*time.Millisecond, true, 2 * s, ""},                 // restarted at 101s
			{103*s + 500*time.Millisecond + min - time.Millisecond, true, 4 * s, "exponential-delay: attempt 3, backoff 4 s"}, // 1ms short of a reset
		}},
		{"exponential-delay non-integer multiplier", func() Strategy { return mustExp(t, exp(s, 5*s, 1.5, h, 100)) }, []step{
			{0, true, s, ""},
			{0, true, 1500 * time.Millisecond, ""},
			{0, true, 2250 * time.Millisecond, ""},
			{0, true, 3375 * time.Millisecond, ""},
			{0, true, 5 * s, ""}, // 5.0625s capped
			{0, true, 5 * s, ""},
		}},
		{"exponential-delay attempts exhausted and sticky", func() Strategy { return mustExp(t, exp(s, min, 2, h, 3)) }, []step{
			{0, true, s, ""},
			{s, true, 2 * s, ""},
			{2 * s, true, 4 * s, "exponential-delay: attempt 3, backoff 4 s"},
			{3 * s, false, 0, "exponential-delay: 3 attempts exhausted without 1 h of failure-free running"},
			{10 * h, false, 0, "exponential-delay: 3 attempts exhausted without 1 h of failure-free running"},
		}},
		{"exponential-delay reset restores attempts", func() Strategy { return mustExp(t, exp(s, min, 2, h, 2)) }, []step{
			{0, true, s, ""},
			{2 * s, true, 2 * s, ""}, // restarted at 4s
			{4*s + h, true, s, "exponential-delay: attempt 1, backoff 1 s"},
			{4*s + h + 2*s, true, 2 * s, ""},
			{4*s + h + 3*s, false, 0, "exponential-delay: 2 attempts exhausted without 1 h of failure-free running"},
		}},
		{"exponential-delay zero initial backoff", func() Strategy { return mustExp(t, exp(0, s, 2, h, 5)) }, []step{
			{0, true, 0, ""}, {0, true, 0, ""},
		}},
	}
	for _, tc := range cases {
		run(t, tc.name, tc.s(), tc.steps)
	}
}

func TestExponentialDelayJitter(t *testing.T) {
	cfg := func(seed uint64) ExponentialDelayConfig {
		return ExponentialDelayConfig{InitialBackoff: time.Second, MaxBackoff: 8 * time.Second, Multiplier: 2,
			ResetThreshold: time.Hour, JitterFactor: 0.5, AttemptsBeforeReset: 1000, Rand: rand.New(rand.NewPCG(seed, 7))}
	}
	seq := func(seed uint64, n int) []time.Duration {
		s := mustExp(t, cfg(seed))
		var out []time.Duration
		for range n {
			d := s.OnFailure(t0)
			if !d.Restart {
				t.Fatalf("refused: %s", d.Reason)
			}
			out = append(out, d.Delay)
		}
		return out
	}
	a, b := seq(42, 200), seq(42, 200)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("same seed gave different delays")
	}
	if c := seq(43, 200); fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatal("different seeds gave the same delays")
	}
	base := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	var below, above int
	for i, d := range a {
		b := 8 * time.Second
		if i < len(base) {
			b = base[i]
		}
		if d < b/2 || d > b+b/2 {
			t.Errorf("delay %d = %v outside %v ± 50%%", i, d, b)
		}
		if i >= len(base) {
			if d < b {
				below++
			} else if d > b {
				above++
			}
		}
	}
	// Jitter goes both ways: with 197 draws at the cap, each side gets a fair share.
	if below < 60 || above < 60 {
		t.Errorf("jitter lopsided: %d below, %d above the backoff", below, above)
	}
}

func TestExponentialDelayConfigValidate(t *testing.T) {
	good := ExponentialDelayConfig{InitialBackoff: time.Second, MaxBackoff: time.Minute, Multiplier: 1.5,
		ResetThreshold: time.Hour, JitterFactor: 0, AttemptsBeforeReset: 1}
	cases := []struct {
		mod  func(*ExponentialDelayConfig)
		want string
	}{
		{func(c *ExponentialDelayConfig) { c.MaxBackoff = 500 * time.Millisecond },
			"exponential-delay restart strategy: restart-strategy.exponential-delay.max-backoff (500 ms) is below restart-strategy.exponential-delay.initial-backoff (1 s): raise the maximum or lower the initial backoff"},
		{func(c *ExponentialDelayConfig) { c.Multiplier = 0.9 },
			"exponential-delay restart strategy: restart-strategy.exponential-delay.backoff-multiplier is 0.9: must be a finite number >= 1"},
		{func(c *ExponentialDelayConfig) { c.JitterFactor = 0.1 },
			"exponential-delay restart strategy: exponential-delay with jitter needs a random source: pass a seeded *rand.Rand"},
		{func(c *ExponentialDelayConfig) { c.JitterFactor = 2; c.Rand = rand.New(rand.NewPCG(1, 1)) },
			"exponential-delay restart strategy: restart-strategy.exponential-delay.jitter-factor is 2: must be between 0 and 1"},
		{func(c *ExponentialDelayConfig) { c.AttemptsBeforeReset = 0 },
			"exponential-delay restart strategy: restart-strategy.exponential-delay.attempts-before-reset-backoff is 0: must be >= 1"},
		{func(c *ExponentialDelayConfig) { c.InitialBackoff = -1; c.MaxBackoff = 0 },
			"exponential-delay restart strategy: restart-strategy.exponential-delay.initial-backoff is -1ns: must be >= 0"},
	}
	if _, err := NewExponentialDelay(good); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		c := good
		tc.mod(&c)
		_, err := NewExponentialDelay(c)
		if err == nil || err.Error() != tc.want {
			t.Errorf("err = %v;\nwant %s", err, tc.want)
		}
	}
}
