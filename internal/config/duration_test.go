package config

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	ok := []struct {
		in   string
		want time.Duration
	}{
		{"100ms", 100 * time.Millisecond},
		{"10 s", 10 * time.Second},
		{"10s", 10 * time.Second},
		{"1min", time.Minute},
		{"5 min", 5 * time.Minute},
		{"5 m", 5 * time.Minute},
		{"2h", 2 * time.Hour},
		{"1d", 24 * time.Hour},
		{"3 days", 72 * time.Hour},
		{"250", 250 * time.Millisecond},
		{"0", 0},
		{" 7 SECONDS ", 7 * time.Second},
		{"1m30s", 90 * time.Second},
		{"1.5s", 1500 * time.Millisecond},
		{"20 us", 20 * time.Microsecond},
		{"3ns", 3},
	}
	for _, c := range ok {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	bad := map[string]string{
		"":                 `empty duration: want a duration such as "100 ms", "10 s", "5 min", "2 h", "1 d" or a plain integer of milliseconds`,
		"-1s":              `negative duration "-1s": durations must be >= 0`,
		"-5":               `negative duration "-5": durations must be >= 0`,
		"ten s":            `bad duration "ten s": want a duration such as "100 ms", "10 s", "5 min", "2 h", "1 d" or a plain integer of milliseconds`,
		"10 fortnights":    `bad duration "10 fortnights": want a duration such as "100 ms", "10 s", "5 min", "2 h", "1 d" or a plain integer of milliseconds`,
		"99999999999999 d": `duration "99999999999999 d" overflows (max about 292 years)`,
	}
	for in, want := range bad {
		_, err := ParseDuration(in)
		if err == nil || err.Error() != want {
			t.Errorf("ParseDuration(%q) error = %v; want %s", in, err, want)
		}
	}
}

func TestFormatDurationRoundTrips(t *testing.T) {
	cases := map[time.Duration]string{
		0:                       "0 ms",
		10 * time.Second:        "10 s",
		90 * time.Second:        "90 s",
		5 * time.Minute:         "5 min",
		time.Hour:               "1 h",
		48 * time.Hour:          "2 d",
		1500 * time.Millisecond: "1500 ms",
		3 * time.Microsecond:    "3 us",
		7:                       "7 ns",
	}
	for d, want := range cases {
		got := FormatDuration(d)
		if got != want {
			t.Errorf("FormatDuration(%v) = %q; want %q", d, got, want)
		}
		back, err := ParseDuration(got)
		if err != nil || back != d {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", d, back, err)
		}
	}
}
