package nexmark

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
)

// Source returns a replayable source of events 0 … events-1 (0:
// unbounded); rateLimit throttles it to that many events per wall-clock
// second over all subtasks (0: as fast as it goes).
func Source(cfg Config, events int64, rateLimit float64) func() weir.Source[Event] {
	g := NewGenerator(cfg)
	return datagen.New(func(i int64) Event {
		var e Event
		g.At(i, &e)
		return e
	}, datagen.WithCount(events), datagen.WithRate(rateLimit))
}

// Watermarks is Flink's Nexmark watermark strategy: dateTime − 4 s.
func Watermarks() weir.WatermarkStrategy[Event] {
	return weir.ForBoundedOutOfOrderness[Event](WatermarkDelay).
		WithTimestampAssigner(func(e Event, _ int64) int64 { return e.DateTime() })
}

// Events adds the source with its watermarks to env.
func Events(env *weir.Env, cfg Config, events int64, rateLimit float64) weir.Stream[Event] {
	return weir.FromSourceWithWatermarks(env, Source(cfg, events, rateLimit), Watermarks()).Name("nexmark").UID("nexmark")
}
