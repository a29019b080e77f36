package nexmark

import "time"

// Config is the generator's configuration (nexmark/nexmark's
// GeneratorConfig); DefaultConfig gives Flink's benchmark defaults.
type Config struct {
	// FirstEventRate is the event-time rate: events per second of event
	// time (--first-event-rate). Event n's dateTime is
	// BaseTime + n·1000/FirstEventRate ms.
	FirstEventRate float64
	// BaseTime is the first event's dateTime, epoch ms (--base-time).
	BaseTime int64
}

// DefaultBaseTime is the default --base-time: a fixed instant, so that
// results are reproducible (2026-01-01T00:00:00Z).
var DefaultBaseTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// DefaultConfig is Flink's Nexmark benchmark configuration.
func DefaultConfig() Config {
	return Config{FirstEventRate: 10_000_000, BaseTime: DefaultBaseTime}
}

// WatermarkDelay is the bound on out-of-orderness of Flink's Nexmark DDL:
// WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND.
const WatermarkDelay = 4 * time.Second
