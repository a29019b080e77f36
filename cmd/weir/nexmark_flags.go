package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir/connectors/nexmark"
)

// nexmarkGenFlags are the Nexmark generator's flags, shared by
// `weir run nexmark`, `weir bench nexmark` and `weir tools nexmark-events`.
type nexmarkGenFlags struct {
	events         int64
	firstEventRate float64
	baseTime       string
	rateLimit      float64
}

// register adds the flags; defaultEvents differs per command.
func (g *nexmarkGenFlags) register(fs *pflag.FlagSet, defaultEvents int64, withRateLimit bool) {
	fs.Int64Var(&g.events, "events", defaultEvents, "events to generate (people, auctions and bids together)")
	fs.Float64Var(&g.firstEventRate, "first-event-rate", 10_000_000, "event-time rate in events per second: event n's dateTime is base-time + n/rate")
	fs.StringVar(&g.baseTime, "base-time", "", "the first event's dateTime: epoch milliseconds or RFC 3339 (default "+time.UnixMilli(nexmark.DefaultBaseTime).UTC().Format(time.RFC3339)+", fixed so results are reproducible)")
	if withRateLimit {
		fs.Float64Var(&g.rateLimit, "rate-limit", 0, "wall-clock throttle in events per second over all subtasks; 0 = unthrottled")
	}
}

// config checks the flags and returns the generator's configuration.
func (g *nexmarkGenFlags) config() (nexmark.Config, error) {
	cfg := nexmark.DefaultConfig()
	if g.events < 1 {
		return cfg, fmt.Errorf("--events %d: must be at least 1 (Nexmark runs are bounded)", g.events)
	}
	if !(g.firstEventRate > 0) || g.firstEventRate > 1e12 {
		return cfg, fmt.Errorf("--first-event-rate %g: must be a positive number of events per second (at most 1e12)", g.firstEventRate)
	}
	cfg.FirstEventRate = g.firstEventRate
	if g.rateLimit < 0 {
		return cfg, fmt.Errorf("--rate-limit %g: must not be negative (0 = unthrottled)", g.rateLimit)
	}
	if g.baseTime != "" {
		if ms, err := strconv.ParseInt(g.baseTime, 10, 64); err == nil {
			cfg.BaseTime = ms
		} else if t, err := time.Parse(time.RFC3339, g.baseTime); err == nil {
			cfg.BaseTime = t.UnixMilli()
		} else {
			return cfg, fmt.Errorf("--base-time %q: want epoch milliseconds (1767225600000) or RFC 3339 (2026-01-01T00:00:00Z)", g.baseTime)
		}
	}
	return cfg, nil
}
