package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/internal/jobstatus"
)

// collect sends the weak accounting of w (the descriptors are in
// names.go, with the other metric names).
func (d weakDescs) collect(ch chan<- prometheus.Metric, w *jobstatus.WeakStats) {
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

// collectTask exports one subtask's weak figures under its task labels.
func (d weakDescs) collectTask(ch chan<- prometheus.Metric, w *jobstatus.TaskWeakStats, labels ...string) {
	gauge := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	gauge(d.taskFailures, float64(w.Failures))
	gauge(d.taskRestartsOf, float64(w.Restarts))
	gauge(d.taskReplayed, float64(w.Replayed))
	gauge(d.taskLost, float64(w.Lost))
	gauge(d.taskDuplicated, float64(w.Duplicated))
	gauge(d.taskLastRecovery, float64(w.LastRecovery.Milliseconds()))
}
