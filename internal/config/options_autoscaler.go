package config

// Autoscaler keys (docs/rescaling.md), Flink's autoscaler's names under
// job.autoscaler.*. The defaults match internal/autoscaler.DefaultConfig.
const (
	AutoscalerEnabled           = "job.autoscaler.enabled"
	AutoscalerInterval          = "job.autoscaler.interval"
	AutoscalerTargetUtilization = "job.autoscaler.target.utilization"
	AutoscalerBoundary          = "job.autoscaler.target.utilization.boundary"
	AutoscalerMetricsWindow     = "job.autoscaler.metrics.window"
	AutoscalerStabilization     = "job.autoscaler.stabilization.interval"
	AutoscalerCatchUp           = "job.autoscaler.catch-up.duration"
	AutoscalerScaleDownInterval = "job.autoscaler.scale-down.interval"
	AutoscalerMaxScaleDown      = "job.autoscaler.scale-down.max-factor"
	AutoscalerMaxScaleUp        = "job.autoscaler.scale-up.max-factor"
	AutoscalerBackpressureLimit = "job.autoscaler.backpressure.limit"
)

func autoscalerOptions() []Option {
	return []Option{
		{Key: AutoscalerEnabled, Default: "false", Kind: KindBool,
			Description: "Let the job rescale itself in place when a vertex's load leaves the target utilization band (docs/rescaling.md); operators the program pinned with Parallelism(n) keep it. Its windows should span several heartbeat.interval on a cluster, where task reports arrive with the heartbeats."},
		{Key: AutoscalerInterval, Default: "10 s", Kind: KindDuration, Validate: durationPositive,
			Description: "How often the autoscaler samples the subtasks' rates and busy times and evaluates its rule."},
		{Key: AutoscalerTargetUtilization, Default: "0.7", Kind: KindFloat, Validate: floatBetween(0.001, 1),
			Description: "Fraction of a vertex's true capacity (records in per second ÷ busy fraction) its target rate should use."},
		{Key: AutoscalerBoundary, Default: "0.3", Kind: KindFloat, Validate: floatBetween(0, 0.99),
			Description: "No rescale while utilization is within target ± this boundary (it must stay below the target)."},
		{Key: AutoscalerMetricsWindow, Default: "3 min", Kind: KindDuration, Validate: durationPositive,
			Description: "Window the rule averages over; it decides only once observations cover half of it."},
		{Key: AutoscalerStabilization, Default: "1 min", Kind: KindDuration,
			Description: "Observations count only this long after the start or a rescale."},
		{Key: AutoscalerCatchUp, Default: "5 min", Kind: KindDuration, Validate: durationPositive,
			Description: "A source's reported lag is to be consumed within this time."},
		{Key: AutoscalerScaleDownInterval, Default: "10 min", Kind: KindDuration,
			Description: "A vertex scales down at most once per this interval."},
		{Key: AutoscalerMaxScaleDown, Default: "0.6", Kind: KindFloat, Validate: floatBetween(0, 1),
			Description: "Largest fraction of its subtasks a vertex gives up in one decision."},
		{Key: AutoscalerMaxScaleUp, Default: "0", Kind: KindFloat, Validate: floatBetween(0, 1e6),
			Description: "Largest factor a vertex grows by in one decision (0: unbounded)."},
		{Key: AutoscalerBackpressureLimit, Default: "0.3", Kind: KindFloat, Validate: floatBetween(0, 1),
			Description: "A vertex backpressured more than this fraction of its time is never scaled down: its busy time understates its load."},
	}
}
