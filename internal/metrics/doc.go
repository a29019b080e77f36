// Package metrics exports a running job's monitoring surface
// (jobstatus.JobStatus) to Prometheus under Flink's metric names with a
// weir_ prefix, so that dashboards and alerts written for Flink's
// Prometheus reporter carry over.
//
// A Job is one prometheus.Collector per job, registered on a registry the
// caller owns; nothing is registered globally:
//
//	reg := prometheus.NewRegistry()
//	m, err := metrics.NewJob(reg, "demo", "demo", hooks.Plan(env).Status, metrics.Options{})
//	if err != nil { ... }
//	defer m.Unregister()
//	http.Handle("/metrics", metrics.Handler(reg))
//
// Every scrape reads the job's atomics and a snapshot of its tasks; nothing
// runs between scrapes. Rates (numRecordsInPerSecond) are computed from the
// counts seen by earlier scrapes over a sliding window (see meter), the way
// Flink's MeterView averages over a minute.
//
// The job's id and name are constant labels (job_id, job_name), so one
// registry can hold the collectors of several jobs; task metrics add
// task_id (the job vertex), task_name and subtask_index, Flink's label
// names.
//
// Event time adds per task currentInputWatermark and
// currentOutputWatermark (Flink's Long.MIN_VALUE before the first
// watermark, as a double), watermarkLag (the scrape's clock minus the
// output watermark, left out while it means nothing) and
// numLateRecordsDropped; see watermark.go.
//
// A job in WEAKLY_CONSISTENT mode (Options.Weak) adds its failover
// accounting, which Flink has no counterpart of: weakFailures,
// weakTaskRestarts, weakRecordsReplayed, weakRecordsLost,
// weakRecordsDuplicated, weakRecordsDropped, weakSnapshotsCompleted,
// weakSnapshotsFailed, weakLastRecoveryDuration, weakRecoveries and
// weakRecoveryDurationTotal under the job scope; see names.go, weak.go and
// docs/weak-consistency.md.
//
// Owns: metric names, labels and rates. Must not touch: the job; it only
// reads jobstatus.JobStatus snapshots and never blocks the JobMaster or a
// task. It does not import internal/runtime (checked by internal/archtest).
package metrics
