package config

// Key names, so that callers cannot misspell them: a typo in a constant is a
// compile error, a typo in a string literal a panic at run time.
const (
	CheckpointingInterval               = "execution.checkpointing.interval"
	CheckpointingMode                   = "execution.checkpointing.mode"
	CheckpointingTimeout                = "execution.checkpointing.timeout"
	CheckpointingMinPause               = "execution.checkpointing.min-pause"
	CheckpointingMaxConcurrent          = "execution.checkpointing.max-concurrent-checkpoints"
	CheckpointingTolerableFailures      = "execution.checkpointing.tolerable-failed-checkpoints"
	CheckpointingUnaligned              = "execution.checkpointing.unaligned.enabled"
	CheckpointingAlignedTimeout         = "execution.checkpointing.aligned-checkpoint-timeout"
	CheckpointingMaxChannelStateBytes   = "execution.checkpointing.unaligned.max-channel-state-bytes"
	StateBackendType                    = "state.backend.type"
	StateBackendIncremental             = "state.backend.incremental"
	StateBackendLocalRecovery           = "state.backend.local-recovery"
	StateBackendLSMDir                  = "state.backend.lsm.dir"
	StateBackendLSMBlockCacheSize       = "state.backend.lsm.block-cache-size"
	StateBackendLSMMemtableSize         = "state.backend.lsm.memtable-size"
	CheckpointsDir                      = "state.checkpoints.dir"
	CheckpointsNumRetained              = "state.checkpoints.num-retained"
	RestartStrategyType                 = "restart-strategy.type"
	FixedDelayAttempts                  = "restart-strategy.fixed-delay.attempts"
	FixedDelayDelay                     = "restart-strategy.fixed-delay.delay"
	ExponentialDelayInitialBackoff      = "restart-strategy.exponential-delay.initial-backoff"
	ExponentialDelayMaxBackoff          = "restart-strategy.exponential-delay.max-backoff"
	ExponentialDelayBackoffMultiplier   = "restart-strategy.exponential-delay.backoff-multiplier"
	ExponentialDelayResetThreshold      = "restart-strategy.exponential-delay.reset-backoff-threshold"
	ExponentialDelayJitterFactor        = "restart-strategy.exponential-delay.jitter-factor"
	ExponentialDelayAttemptsBeforeReset = "restart-strategy.exponential-delay.attempts-before-reset-backoff"
	FailureRateMaxFailures              = "restart-strategy.failure-rate.max-failures-per-interval"
	FailureRateInterval                 = "restart-strategy.failure-rate.failure-rate-interval"
	FailureRateDelay                    = "restart-strategy.failure-rate.delay"
	ParallelismDefault                  = "parallelism.default"
	MaxParallelism                      = "pipeline.max-parallelism"
	NetworkCreditsPerChannel            = "taskmanager.network.credits-per-channel"
	NetworkMaxOverdraft                 = "taskmanager.network.max-overdraft-buffers-per-channel"
	BatchSize                           = "pipeline.batch-size"
	BufferTimeout                       = "execution.buffer-timeout.interval"
	LocalTaskManagers                   = "minicluster.number-of-taskmanagers"
)

// Canonical values of the enum options.
const (
	ModeExactlyOnce = "EXACTLY_ONCE"
	ModeAtLeastOnce = "AT_LEAST_ONCE"
	BackendHeap     = "heap"
	BackendLSM      = "lsm"
	RestartNone     = "none"
	RestartFixed    = "fixed-delay"
	RestartExpDelay = "exponential-delay"
	RestartFailRate = "failure-rate"
)
