package config

import (
	"math"
	"strconv"

	"github.com/weirstream/weir/internal/keygroup"
)

// Options returns the registry of every key weir knows, freshly built on
// each call so that no caller can change another's view. Defaults follow
// Flink's current documentation where Flink has the option; the Description
// says where weir deliberately differs.
func Options() []Option {
	return append([]Option{
		// Checkpointing.
		{Key: CheckpointingInterval, Default: "0", Kind: KindDuration,
			Description: "Interval between periodic checkpoints; 0 disables checkpointing."},
		{Key: CheckpointingMode, Default: ModeExactlyOnce, Kind: KindEnum,
			Enum:         []string{ModeExactlyOnce, ModeAtLeastOnce, ModeWeak},
			ValueAliases: map[string]string{"exactly-once": ModeExactlyOnce, "at-least-once": ModeAtLeastOnce, "weakly-consistent": ModeWeak},
			Description:  "Checkpointing guarantee: EXACTLY_ONCE aligns barriers, AT_LEAST_ONCE does not. weir: WEAKLY_CONSISTENT injects no barriers: each task snapshots on its own schedule, a failed task restarts alone from its own snapshot, and producers replay what it lost from their in-flight logs (docs/weak-consistency.md)."},
		{Key: WeakInFlightLogMaxRecords, Default: "1000000", Kind: KindInt, Validate: intAtLeast(1),
			Description: "weir, WEAKLY_CONSISTENT mode: the records each producer keeps per output channel for replay to a restarted consumer (those sent since the consumer's latest completed snapshot; each producer's snapshot stores them too). While the consumer reads, the oldest beyond it are dropped, and lost only if the consumer restarts from before them; while it does not read (it restarts), the producer waits instead."},
		{Key: WeakInFlightLogSnapshot, Default: "true", Kind: KindBool,
			Description: "weir, WEAKLY_CONSISTENT mode: each task's snapshot also stores what its output in-flight logs retain, so that the producers of a lost TaskManager rebuild their logs and nothing they held is lost. It costs writing what the logs retain (about one snapshot interval of each task's output) per snapshot, and encoding each record once, at the first snapshot that stores it; false saves that, and a lost TaskManager's logs are then lost and counted."},
		{Key: CheckpointingTimeout, Default: "10 min", Kind: KindDuration, Validate: durationPositive,
			Description: "A checkpoint not completed within this time is aborted."},
		{Key: CheckpointingMinPause, Default: "0", Kind: KindDuration,
			Description: "Minimum time between the end of one checkpoint and the start of the next."},
		{Key: CheckpointingMaxConcurrent, Default: "1", Kind: KindInt, Validate: intAtLeast(1),
			Description: "Maximum number of checkpoints in progress at the same time."},
		{Key: CheckpointingTolerableFailures, Default: "0", Kind: KindInt, Validate: intAtLeast(0),
			Description: "Consecutive checkpoint failures tolerated before the job fails over. Failures of checkpoint storage (disk full, I/O errors, S3 unreachable) do not count: no restart can fix storage, so checkpoints back off instead (execution.checkpointing.storage-failure-max-backoff) and the job keeps running."},
		{Key: CheckpointingStorageFailureTimeout, Default: "30 min", Kind: KindDuration,
			Description: "weir: how long checkpoint storage may keep failing (every checkpoint failing for a storage cause) before the job fails for good, naming the storage and the error; 0: never. The job fails earlier when a two-phase-commit sink's open transaction would otherwise outlive its transaction timeout (Kafka transaction.timeout.ms)."},
		{Key: CheckpointingStorageMaxBackoff, Default: "2 min", Kind: KindDuration, Validate: durationPositive,
			Description: "weir: while checkpoint storage fails, checkpoints are retried after a backoff that starts at the interval and doubles up to this; storage is probed each interval meanwhile, so the next checkpoint follows within one interval once it works again."},
		{Key: CheckpointingUnaligned, Default: "false", Kind: KindBool,
			Description: "Take unaligned checkpoints (barriers overtake buffered records, which become channel state); requires EXACTLY_ONCE."},
		{Key: CheckpointingAlignedTimeout, Default: "0", Kind: KindDuration,
			FallbackKeys: []string{"execution.checkpointing.alignment-timeout"},
			Description:  "With unaligned checkpoints enabled, start each checkpoint aligned and switch to unaligned after this long; 0 means unaligned from the start."},
		{Key: CheckpointingMaxChannelStateBytes, Default: strconv.Itoa(256 << 20), Kind: KindInt, Validate: intAtLeast(1),
			Description: "weir: most bytes of in-flight records one subtask may store as channel state in one unaligned checkpoint; beyond it that checkpoint is declined (the job goes on)."},

		// State.
		{Key: StateBackendType, Default: BackendHeap, Kind: KindEnum,
			Enum:         []string{BackendHeap, BackendLSM},
			ValueAliases: map[string]string{"hashmap": BackendHeap, "rocksdb": BackendLSM},
			FallbackKeys: []string{"state.backend"},
			Description:  `State backend: "heap" (Flink's "hashmap") keeps state in memory with copy-on-write snapshots; "lsm" (Flink's "rocksdb") keeps it in a Pebble store on local disk per task, so it can exceed memory. Checkpoints of both are interchangeable.`},
		{Key: StateBackendIncremental, Default: "false", Kind: KindBool,
			FallbackKeys: []string{"execution.checkpointing.incremental"},
			Description:  "lsm backend: incremental checkpoints: upload only the SST files that no retained checkpoint holds yet into the job's shared/ folder; savepoints and final checkpoints stay canonical. Ignored by the heap backend."},
		{Key: StateBackendLocalRecovery, Default: "false", Kind: KindBool,
			Description: "lsm backend with incremental checkpoints: keep the newest completed checkpoint's files on local disk, so a task restarted on this machine downloads only what it does not have."},
		{Key: StateBackendLSMDir, Default: "", Kind: KindString,
			FallbackKeys: []string{"state.backend.rocksdb.localdir"},
			Description:  "lsm backend: folder under which each task makes its store (removed when the task ends); empty is the system's temporary folder."},
		{Key: StateBackendLSMBlockCacheSize, Default: "64 mb", Kind: KindString, Validate: memorySizeAtLeast(0),
			FallbackKeys: []string{"state.backend.rocksdb.block.cache-size"},
			Description:  "lsm backend: block cache capacity per task's store."},
		{Key: StateBackendLSMMemtableSize, Default: "16 mb", Kind: KindString, Validate: memorySizeAtLeast(1 << 20),
			FallbackKeys: []string{"state.backend.rocksdb.writebuffer.size"},
			Description:  "lsm backend: size of one memtable per task's store; at most two exist at a time, so a store uses up to block-cache-size + 2 × memtable-size outside the Go heap, plus the write buffer (write-buffer-size) in it."},
		{Key: StateBackendLSMWriteBufferSize, Default: "128 mb", Kind: KindString, Validate: memorySizeAtLeast(0),
			Description: "lsm backend: capacity per task's store of the write buffer, a cache of recently read and written value, list and map state entries in front of the store with read-your-writes: a read-modify-write of a buffered key touches no store, dirty entries are written in batches when evicted and before every checkpoint. Counted per entry with its overhead; 0 turns it off."},
		{Key: CheckpointsDir, Default: "", Kind: KindString,
			FallbackKeys: []string{"execution.checkpointing.dir"},
			Description:  "Directory (file:// or s3:// URI or a local path) where checkpoint data and metadata are written."},
		{Key: CheckpointsNumRetained, Default: "3", Kind: KindInt, Validate: intAtLeast(1),
			FallbackKeys: []string{"execution.checkpointing.num-retained"},
			Description:  "Completed checkpoints to retain (weir keeps 3 by default, Flink 1) so a corrupt latest checkpoint can fall back to an older one."},

		// Restart strategies.
		{Key: RestartStrategyType, Default: RestartExpDelay, Kind: KindEnum,
			Enum: []string{RestartNone, RestartFixed, RestartExpDelay, RestartFailRate},
			ValueAliases: map[string]string{
				"off": RestartNone, "disable": RestartNone,
				"fixeddelay": RestartFixed, "exponentialdelay": RestartExpDelay, "failurerate": RestartFailRate,
			},
			FallbackKeys: []string{"restart-strategy"},
			Description:  "Restart strategy after a failure. As in Flink, when the key is not set and checkpointing is disabled no restart is attempted."},
		{Key: FixedDelayAttempts, Default: "1", Kind: KindInt, Validate: intAtLeast(0),
			Description: "fixed-delay: restarts attempted before the job fails."},
		{Key: FixedDelayDelay, Default: "1 s", Kind: KindDuration,
			Description: "fixed-delay: wait before each restart."},
		{Key: ExponentialDelayInitialBackoff, Default: "1 s", Kind: KindDuration,
			Description: "exponential-delay: wait before the first restart."},
		{Key: ExponentialDelayMaxBackoff, Default: "1 min", Kind: KindDuration,
			Description: "exponential-delay: upper bound of the wait before a restart."},
		{Key: ExponentialDelayBackoffMultiplier, Default: "1.5", Kind: KindFloat, Validate: floatAtLeast(1),
			Description: "exponential-delay: the wait grows by this factor after each consecutive failure."},
		{Key: ExponentialDelayResetThreshold, Default: "1 h", Kind: KindDuration,
			Description: "exponential-delay: after running this long without a failure the wait and the attempt count reset."},
		{Key: ExponentialDelayJitterFactor, Default: "0.1", Kind: KindFloat, Validate: floatBetween(0, 1),
			Description: "exponential-delay: each wait is moved randomly by up to this fraction of itself, so that many jobs do not restart in step."},
		{Key: ExponentialDelayAttemptsBeforeReset, Default: strconv.Itoa(math.MaxInt32), Kind: KindInt, Validate: intAtLeast(1),
			Description: "exponential-delay: restarts attempted before the job fails, counted since the last reset (default: unlimited)."},
		{Key: FailureRateMaxFailures, Default: "1", Kind: KindInt, Validate: intAtLeast(1),
			Description: "failure-rate: failures tolerated within one failure-rate-interval before the job fails."},
		{Key: FailureRateInterval, Default: "1 min", Kind: KindDuration, Validate: durationPositive,
			Description: "failure-rate: the sliding window in which failures are counted."},
		{Key: FailureRateDelay, Default: "1 s", Kind: KindDuration,
			Description: "failure-rate: wait before each restart."},

		// Parallelism and data exchange.
		{Key: ParallelismDefault, Default: "1", Kind: KindInt, Validate: intAtLeast(1),
			Description: "Parallelism of operators that do not set their own."},
		{Key: MaxParallelism, Default: strconv.Itoa(keygroup.DefaultMaxParallelism), Kind: KindInt,
			Validate:    intBetween(1, keygroup.UpperBoundMaxParallelism),
			Description: "Number of key groups: the upper bound of rescaling keyed state; fixed for the life of the job's state."},
		{Key: NetworkCreditsPerChannel, Default: "4", Kind: KindInt, Validate: intAtLeast(1),
			Description: "weir: exclusive buffers (credits) per input channel; a sender without credit stops, so backpressure reaches the source."},
		{Key: NetworkMaxOverdraft, Default: "2", Kind: KindInt, Validate: intAtLeast(0),
			FallbackKeys: []string{"taskmanager.network.memory.max-overdraft-buffers-per-gate"},
			Description:  "Batches a task may send per channel beyond its credits to finish the batch it is processing, so it never waits for credit mid-batch and takes checkpoint triggers promptly under backpressure (Flink counts them per gate)."},
		{Key: BatchSize, Default: "1024", Kind: KindInt, Validate: intAtLeast(1),
			Description: "weir: records per batch moved between operators."},
		{Key: BufferTimeout, Default: "100 ms", Kind: KindDuration,
			Description: "Longest time a partly filled output batch waits before it is sent (tasks also wake up for it when idle); 0 sends after every batch a task processes."},
		{Key: AutoWatermarkInterval, Default: "200 ms", Kind: KindDuration,
			Description: "How often sources and timestamp assigners emit their periodic watermarks (WatermarkStrategy generators); 0 emits after every batch instead."},
		{Key: LocalTaskManagers, Default: "1", Kind: KindInt, Validate: intBetween(1, 64),
			FallbackKeys: []string{"local.number-taskmanager"},
			Description:  "Local mode: TaskManagers run in the process. Above 1 each gets its own data plane on 127.0.0.1 and subtask i runs on TaskManager i mod N, so records between them cross loopback TCP serialized, as in a cluster (for tests and measurements)."},
	}, append(append(append(append(append(append(s3Options(), clusterOptions()...), haOptions()...), restOptions()...), securityOptions()...), autoscalerOptions()...), schedulerOptions()...)...)
}
