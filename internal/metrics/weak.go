package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/internal/runtime"
)

// The job metrics of WEAKLY_CONSISTENT mode (runtime.WeakStats,
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
}

func newWeakDescs(job prometheus.Labels) weakDescs {
	j := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(jobPrefix+name, help, nil, job)
	}
	return weakDescs{
		failures:            j("weakFailures", "WEAKLY_CONSISTENT: task failures since the job started (a lost TaskManager counts once per task it ran)."),
		taskRestarts:        j("weakTaskRestarts", "WEAKLY_CONSISTENT: task executions deployed again, each alone from its own latest snapshot."),
		replayed:            j("weakRecordsReplayed", "WEAKLY_CONSISTENT: records producers sent again from their in-flight logs to restarted consumers."),
		lost:                j("weakRecordsLost", "WEAKLY_CONSISTENT: records a restarted consumer needed that no in-flight log held any more, and source positions skipped; exact, not an estimate."),
		duplicated:          j("weakRecordsDuplicated", "WEAKLY_CONSISTENT: records delivered twice because a restarted producer could not replay deterministically; exact, not an estimate."),
		dropped:             j("weakRecordsDropped", "WEAKLY_CONSISTENT: records the in-flight logs dropped for their size bound (execution.checkpointing.weak.in-flight-log.max-records) while no consumer needed them; lost only if a consumer fails before its next snapshot."),
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
	}
}

// collect sends the weak accounting of w.
func (d weakDescs) collect(ch chan<- prometheus.Metric, w *runtime.WeakStats) {
	gauge := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v)
	}
	millis := func(nanos int64) float64 { return float64(time.Duration(nanos).Milliseconds()) }
	gauge(d.failures, float64(w.Failures.Load()))
	gauge(d.taskRestarts, float64(w.TaskRestarts.Load()))
	gauge(d.replayed, float64(w.Replayed.Load()))
	gauge(d.lost, float64(w.Lost.Load()))
	gauge(d.duplicated, float64(w.Duplicated.Load()))
	gauge(d.dropped, float64(w.Dropped.Load()))
	gauge(d.snapshotsCompleted, float64(w.SnapshotsCompleted.Load()))
	gauge(d.snapshotsFailed, float64(w.SnapshotsFailed.Load()))
	gauge(d.lastRecovery, millis(w.LastRecoveryNanos.Load()))
	gauge(d.recoveries, float64(w.Recoveries.Load()))
	gauge(d.recoveryDurationSum, millis(w.RecoveryNanos.Load()))
}
