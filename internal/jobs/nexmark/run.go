package nexmark

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// BuildQuery adds query q over events 0 … n-1 of p.Gen to env: the
// generator's source (throttled to rateLimit events per wall-clock second
// over all subtasks, 0 = unthrottled) with Flink's watermarks, the query,
// and its sink (p.Out, or discarding with no p.Out). It is what
// `weir run nexmark` and `weir bench nexmark` build, so both run exactly
// the job the tests check.
func BuildQuery(env *weir.Env, q *Query, n int64, rateLimit float64, p Params) error {
	return q.Build(env, nexmark.Events(env, p.Gen, n, rateLimit), p)
}

// BuildGenerator adds the generator alone to env: events 0 … n-1 of cfg
// with their watermarks into a sink that drops them, at the environment's
// parallelism. The benchmark measures it as the floor every query pays.
func BuildGenerator(env *weir.Env, cfg nexmark.Config, n int64) {
	events := nexmark.Events(env, cfg, n, 0)
	weir.SinkTo(events, func() weir.Sink[nexmark.Event] { return discard[nexmark.Event]{} }).Name("discard").UID("sink")
}
