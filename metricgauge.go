package weir

import "github.com/weirstream/weir/internal/jobstatus"

// PendingRecordsGauge names the gauge a source sets with SetGauge to the
// records it has not read yet (Flink's pendingRecords): the distance to
// the end of its partitions, stream or log. A subtask may set it once or
// per split, labelled; its pending records are the sum. The Kafka and
// NATS sources set it. The autoscaler reads it as the source's lag and
// sizes the job to catch it up within job.autoscaler.catch-up.duration;
// without it a source's target is what it reads.
const PendingRecordsGauge = jobstatus.PendingRecordsGauge

// SetGauge publishes a gauge of the operator: a figure the job's
// monitoring should see, such as a source's lag. name is a Prometheus
// metric name and labels are key, value pairs telling gauges of one name
// apart. The engine exports the gauge with the task's metrics on the
// JobManager's /metrics, labelled with the job and the task (task_id,
// task_name, subtask_index) besides labels — in a local run and in a
// cluster, where the TaskManagers' heartbeats carry it — as Flink exports
// a metric group's gauges. The last value set stays until the task ends.
// SetGauge may be called from any goroutine.
func (rc *RuntimeContext) SetGauge(name string, v float64, labels ...string) {
	if rc == nil || rc.oc == nil || rc.oc.Gauges == nil {
		return
	}
	rc.oc.Gauges.Set(name, v, labels...)
}
