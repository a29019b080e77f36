package metrics

import "github.com/prometheus/client_golang/prometheus"

// Metric name prefixes: Flink's scope formats (jobmanager.job,
// taskmanager.job.task) under weir_.
const (
	jobPrefix  = "weir_jobmanager_job_"
	taskPrefix = "weir_taskmanager_job_task_"
)

// The event-time task metrics, Flink's names; exported so that a
// TaskManager's own /metrics (internal/cluster) names them alike. Flink
// keeps numLateRecordsDropped and watermarkLag on the operator scope (a
// window operator, a source); weir's task metrics have no operator level,
// so they are the sums (lateness) and the chain's output (lag) of the task.
const (
	NameInputWatermark     = "currentInputWatermark"
	NameOutputWatermark    = "currentOutputWatermark"
	NameWatermarkLag       = "watermarkLag"
	NameLateRecordsDropped = "numLateRecordsDropped"

	HelpInputWatermark     = "Milliseconds: the subtask's input watermark, the minimum over its active input channels (a source task: the watermark its source generated); -9.223372036854776e+18 (Long.MIN_VALUE) before the first."
	HelpOutputWatermark    = "Milliseconds: the last watermark the subtask sent downstream; -9.223372036854776e+18 (Long.MIN_VALUE) before the first."
	HelpWatermarkLag       = "Milliseconds from the subtask's current output watermark to the processing time of the scrape; absent before the first watermark and after the end of input."
	HelpLateRecordsDropped = "Records the subtask's window operators dropped as later than their allowed lateness, in its current attempt."
)

// taskLabels are the variable labels of task metrics, Flink's names.
var taskLabels = []string{"task_id", "task_name", "subtask_index"}

// descs are the descriptors of one job's metrics; the job's id and name
// are constant labels.
type descs struct {
	lastDuration, lastSize, lastFullSize, lastCompletedID *prometheus.Desc
	lastBuffered, lastProcessed, lastPersisted            *prometheus.Desc
	completed, failed, inProgress, total                  *prometheus.Desc
	failedStorage, storageFailing, failedByCause          *prometheus.Desc
	restarts, lostTxns, restoredID, uptime                *prometheus.Desc
	restoreTimestamp, restoreDuration, autoscalerRescales *prometheus.Desc
	recordsIn, recordsOut, recordsInRate, recordsOutRate  *prometheus.Desc
	backPressured, alignmentTime, creditsAvailable        *prometheus.Desc
	inputWatermark, outputWatermark, watermarkLag         *prometheus.Desc
	lateDropped, reactiveRescales                         *prometheus.Desc
	asyncInFlight, asyncTimeouts, asyncRetries, asyncLat  *prometheus.Desc
	busyRate, idleRate, bpRate, busyTotal, idleTotal      *prometheus.Desc
	bpTotal                                               *prometheus.Desc
}

func newDescs(job prometheus.Labels) descs {
	j := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(jobPrefix+name, help, nil, job)
	}
	t := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(taskPrefix+name, help, taskLabels, job)
	}
	return descs{
		lastDuration:       j("lastCheckpointDuration", "Milliseconds from trigger to completion of the last completed checkpoint."),
		lastSize:           j("lastCheckpointSize", "Bytes the last completed checkpoint persisted itself; for an incremental checkpoint the files it uploaded, without those of earlier checkpoints it references."),
		lastFullSize:       j("lastCheckpointFullSize", "Bytes of all state the last completed checkpoint references; equals lastCheckpointSize for full snapshots."),
		lastCompletedID:    j("lastCompletedCheckpointId", "Id of the last completed checkpoint (0: none yet)."),
		lastBuffered:       j("lastCheckpointAlignmentBuffered", "Bytes the last completed checkpoint's alignment held back: records queued in blocked channels (aligned) or channel state (unaligned)."),
		lastProcessed:      j("lastCheckpointProcessedData", "Approximate bytes processed during the last completed checkpoint's alignment."),
		lastPersisted:      j("lastCheckpointPersistedData", "Bytes of in-flight data the last completed checkpoint persisted as channel state (unaligned only)."),
		completed:          j("numberOfCompletedCheckpoints", "Checkpoints completed since the job started."),
		failed:             j("numberOfFailedCheckpoints", "Checkpoints failed or declined since the job started."),
		failedStorage:      j("numberOfFailedCheckpointsStorage", "Checkpoints failed since the job started because checkpoint storage failed (disk full, I/O error, S3 unreachable); they do not count towards tolerable-failed-checkpoints."),
		failedByCause:      prometheus.NewDesc(jobPrefix+"numberOfFailedCheckpointsByCause", "Checkpoints failed or abandoned since the job started, by cause: declined, timeout, storage, registration, task-failure (absent until one of the cause fails).", []string{"cause"}, job),
		storageFailing:     j("checkpointStorageFailing", "1 while checkpoint storage fails (from a storage failure until a checkpoint completes), else 0."),
		inProgress:         j("numberOfInProgressCheckpoints", "Checkpoints triggered and not yet completed or failed."),
		total:              j("totalNumberOfCheckpoints", "Completed, failed and in-progress checkpoints."),
		restarts:           j("numRestarts", "Restarts of the job after failures."),
		lostTxns:           j("numberOfLostTransactions", "Pre-committed transactions a sink found lost at commit since the job started: output of a completed checkpoint that no restart can bring back (data loss; the job fails)."),
		restoredID:         j("lastRestoredCheckpointId", "Id of the checkpoint the running attempt restored from (0: none)."),
		restoreTimestamp:   j("lastCheckpointRestoreTimestamp", "Unix milliseconds when the last restore from a checkpoint began (0: never restored)."),
		restoreDuration:    j("lastRestoreDuration", "Milliseconds the last restore took: the slowest subtask's time from its start until its operators had restored their state (0: never restored, or in progress)."),
		autoscalerRescales: j("numberOfAutoscalerRescales", "Rescales the autoscaler carried out since the job started (job.autoscaler.enabled)."),
		reactiveRescales:   j("numberOfReactiveRescales", "Rescales reactive mode carried out since the job was submitted (scheduler-mode: reactive): up when TaskManagers joined, down when some were lost."),
		uptime:             j("uptime", "Milliseconds since the job started while it runs; -1 once it ended."),
		recordsIn:          t("numRecordsIn", "Records the subtask received in its current attempt."),
		recordsOut:         t("numRecordsOut", "Records the subtask emitted in its current attempt (sources only for now)."),
		recordsInRate:      t("numRecordsInPerSecond", "Records received per second over the rate window."),
		recordsOutRate:     t("numRecordsOutPerSecond", "Records emitted per second over the rate window."),
		backPressured:      t("isBackPressured", "1 if the subtask's output waited for credit since the previous sample, else 0."),
		alignmentTime:      t("checkpointAlignmentTime", "Nanoseconds the subtask's latest checkpoint alignment took, first barrier to last (0 for sources)."),
		creditsAvailable:   t("creditsAvailable", "Credits the subtask's output channels hold now: buffers it may send without waiting (0: backpressured or no outputs)."),
		inputWatermark:     t(NameInputWatermark, HelpInputWatermark),
		outputWatermark:    t(NameOutputWatermark, HelpOutputWatermark),
		watermarkLag:       t(NameWatermarkLag, HelpWatermarkLag),
		lateDropped:        t(NameLateRecordsDropped, HelpLateRecordsDropped),
		asyncInFlight:      t("asyncCallsInFlight", "Async I/O calls (weir.AsyncMap) the subtask runs now; only for subtasks with an async operator."),
		asyncTimeouts:      t("numAsyncCallTimeouts", "Async I/O calls of the subtask that timed out, in its current attempt."),
		asyncRetries:       t("numAsyncCallRetries", "Async I/O call attempts the subtask made after a failed one, in its current attempt."),
		busyRate:           t("busyTimeMsPerSecond", "Milliseconds per second the subtask was busy (neither idle nor backpressured), over its latest window of one to two seconds."),
		idleRate:           t("idleTimeMsPerSecond", "Milliseconds per second the subtask waited for input (or its source read nothing), over its latest window of one to two seconds."),
		bpRate:             t("backPressuredTimeMsPerSecond", "Milliseconds per second the subtask waited for output credit, over its latest window of one to two seconds."),
		busyTotal:          t("accumulatedBusyTime", "Milliseconds the subtask was busy in its current attempt."),
		idleTotal:          t("accumulatedIdleTime", "Milliseconds the subtask waited for input in its current attempt."),
		bpTotal:            t("accumulatedBackPressuredTime", "Milliseconds the subtask waited for output credit in its current attempt."),
		asyncLat:           t("asyncCallLatencyMean", "Milliseconds: the mean time of the subtask's completed async I/O calls, first attempt to completion, in its current attempt."),
	}
}

func (d descs) all() []*prometheus.Desc {
	return []*prometheus.Desc{
		d.lastDuration, d.lastSize, d.lastFullSize, d.lastCompletedID, d.lastBuffered, d.lastProcessed, d.lastPersisted, d.completed, d.failed, d.inProgress, d.total,
		d.failedStorage, d.storageFailing, d.failedByCause,
		d.restarts, d.lostTxns, d.restoredID, d.restoreTimestamp, d.restoreDuration, d.uptime, d.autoscalerRescales, d.reactiveRescales,
		d.recordsIn, d.recordsOut, d.recordsInRate, d.recordsOutRate, d.backPressured, d.alignmentTime, d.creditsAvailable,
		d.inputWatermark, d.outputWatermark, d.watermarkLag, d.lateDropped,
		d.busyRate, d.idleRate, d.bpRate, d.busyTotal, d.idleTotal, d.bpTotal,
		d.asyncInFlight, d.asyncTimeouts, d.asyncRetries, d.asyncLat,
	}
}

// The job metrics of WEAKLY_CONSISTENT mode (jobstatus.WeakStats,
// docs/weak-consistency.md), exported only for a job in that mode
// (Options.Weak). Flink has no such mode, so the names are weir's, in the
// job scope's camelCase with a weak prefix that keeps them together:
// weir_jobmanager_job_weakRecordsLost and so on. Like every job metric
// they are gauges of counts since the job started; the recovery time is
// in milliseconds, as lastRestoreDuration.
type weakDescs struct {
	failures, taskRestarts                        *prometheus.Desc
	replayed, lost, duplicated, dropped           *prometheus.Desc
	snapshotsCompleted, snapshotsFailed           *prometheus.Desc
	lastRecovery, recoveries, recoveryDurationSum *prometheus.Desc
	// Per subtask (task labels), over its attempts.
	taskFailures, taskRestartsOf, taskReplayed, taskLost, taskDuplicated, taskLastRecovery *prometheus.Desc
}

func newWeakDescs(job prometheus.Labels) weakDescs {
	j := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(jobPrefix+name, help, nil, job)
	}
	t := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(taskPrefix+name, help, taskLabels, job)
	}
	return weakDescs{
		taskFailures:        t("weakFailures", "WEAKLY_CONSISTENT: failures of this subtask since the job started."),
		taskRestartsOf:      t("weakRestarts", "WEAKLY_CONSISTENT: executions of this subtask deployed again, each alone from its own latest snapshot."),
		taskReplayed:        t("weakRecordsReplayed", "WEAKLY_CONSISTENT: records producers sent this subtask again from their in-flight logs after it restarted."),
		taskLost:            t("weakRecordsLost", "WEAKLY_CONSISTENT: records this subtask needed that no in-flight log held any more; exact."),
		taskDuplicated:      t("weakRecordsDuplicated", "WEAKLY_CONSISTENT: records this subtask possibly delivered otherwise (twice, with another missing) after a restart it could not replay deterministically; an upper bound."),
		taskLastRecovery:    t("weakLastRecoveryDuration", "WEAKLY_CONSISTENT: milliseconds from this subtask's latest failure until its new execution processed again (0: none)."),
		failures:            j("weakFailures", "WEAKLY_CONSISTENT: task failures since the job started (a lost TaskManager counts once per task it ran)."),
		taskRestarts:        j("weakTaskRestarts", "WEAKLY_CONSISTENT: task executions deployed again, each alone from its own latest snapshot."),
		replayed:            j("weakRecordsReplayed", "WEAKLY_CONSISTENT: records producers sent again from their in-flight logs to restarted consumers."),
		lost:                j("weakRecordsLost", "WEAKLY_CONSISTENT: records a consumer needed that no in-flight log held any more (dropped by the bound before it read them, or after, when it restarted from before them, or gone with a TaskManager), each once; exact, not an estimate."),
		duplicated:          j("weakRecordsDuplicated", "WEAKLY_CONSISTENT: records possibly delivered otherwise (twice, with another missing) because a restarted task could not replay deterministically; an upper bound."),
		dropped:             j("weakRecordsDropped", "WEAKLY_CONSISTENT: records the in-flight logs dropped for their size bound (execution.checkpointing.weak.in-flight-log.max-records), the lost ones included; the others are lost only if their consumer restarts from before them."),
		snapshotsCompleted:  j("weakSnapshotsCompleted", "WEAKLY_CONSISTENT: per-task snapshots completed."),
		snapshotsFailed:     j("weakSnapshotsFailed", "WEAKLY_CONSISTENT: per-task snapshots failed or declined; one task's failed snapshot fails no other."),
		lastRecovery:        j("weakLastRecoveryDuration", "WEAKLY_CONSISTENT: milliseconds from the latest task failure until the task's new execution processed again (0: no recovery yet)."),
		recoveries:          j("weakRecoveries", "WEAKLY_CONSISTENT: task recoveries measured (the count of weakRecoveryDurationTotal)."),
		recoveryDurationSum: j("weakRecoveryDurationTotal", "WEAKLY_CONSISTENT: milliseconds of all measured task recoveries; divided by weakRecoveries, the mean recovery time."),
	}
}

func (d weakDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{
		d.failures, d.taskRestarts, d.replayed, d.lost, d.duplicated, d.dropped,
		d.snapshotsCompleted, d.snapshotsFailed, d.lastRecovery, d.recoveries, d.recoveryDurationSum,
		d.taskFailures, d.taskRestartsOf, d.taskReplayed, d.taskLost, d.taskDuplicated, d.taskLastRecovery,
	}
}
