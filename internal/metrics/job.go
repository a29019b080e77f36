package metrics

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/internal/jobstatus"
)

// Options tune a Job collector. The zero value is ready to use.
type Options struct {
	// Now is the clock the rates and the uptime are measured with (nil:
	// time.Now); tests inject one.
	Now func() time.Time
	// RateWindow is the span numRecords*PerSecond average over (0: one
	// minute, as Flink's MeterView).
	RateWindow time.Duration
	// Weak exports the accounting of WEAKLY_CONSISTENT mode (weak.go);
	// set it for a job in that mode (execution.checkpointing.mode), whose
	// jobstatus.JobStatus.Weak the runtime fills. Other jobs leave it out
	// rather than export zeros that mean nothing.
	Weak bool
}

// Job exports one job's status as Prometheus metrics. It is a
// prometheus.Collector registered by NewJob; Collect may run concurrently
// (several scrapers).
type Job struct {
	reg    prometheus.Registerer
	status *jobstatus.JobStatus
	now    func() time.Time
	window time.Duration
	d      descs
	weak   *weakDescs        // nil unless Options.Weak
	labels prometheus.Labels // job_id, job_name
	gauges *operatorGauges

	mu     sync.Mutex // guards meters
	meters map[taskKey]*taskMeters
}

type taskKey struct{ vertex, subtask int }

type taskMeters struct{ in, out meter }

// NewJob registers the metrics of the job with the given id and name on
// reg. Unregister removes them when the job is gone.
func NewJob(reg prometheus.Registerer, id, name string, status *jobstatus.JobStatus, o Options) (*Job, error) {
	if reg == nil {
		return nil, errors.New("metrics: nil prometheus.Registerer; pass the registry the /metrics handler gathers from")
	}
	if status == nil {
		return nil, fmt.Errorf("metrics: job %q has a nil status", name)
	}
	j := &Job{
		reg: reg, status: status, now: o.Now, window: o.RateWindow,
		d:      newDescs(prometheus.Labels{"job_id": id, "job_name": name}),
		labels: prometheus.Labels{"job_id": id, "job_name": name},
		meters: map[taskKey]*taskMeters{},
	}
	j.gauges = &operatorGauges{}
	j.gauges.j.Store(j)
	if o.Weak {
		w := newWeakDescs(prometheus.Labels{"job_id": id, "job_name": name})
		j.weak = &w
	}
	if j.now == nil {
		j.now = time.Now
	}
	if j.window <= 0 {
		j.window = time.Minute
	}
	if err := reg.Register(j); err != nil {
		return nil, fmt.Errorf("metrics: register job %q: %w", name, err)
	}
	if err := reg.Register(j.gauges); err != nil {
		reg.Unregister(j)
		return nil, fmt.Errorf("metrics: register the operator gauges of job %q: %w", name, err)
	}
	return j, nil
}

// Unregister removes the job's metrics from the registry.
func (j *Job) Unregister() {
	j.reg.Unregister(j)
	j.gauges.j.Store(nil)
}

// Describe sends the descriptors of every metric the job exports.
func (j *Job) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range j.d.all() {
		ch <- d
	}
	if j.weak != nil {
		for _, d := range j.weak.all() {
			ch <- d
		}
	}
}

// Collect reads the job's status once and sends its metrics.
func (j *Job) Collect(ch chan<- prometheus.Metric) {
	now := j.now()
	s := j.status
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	inProgress := 0
	for _, c := range s.Checkpoints(now) {
		if c.Status == jobstatus.CheckpointInProgress {
			inProgress++
		}
	}
	completed, failed := s.CompletedCheckpoints.Load(), s.FailedCheckpoints.Load()
	gauge(j.d.lastDuration, float64(time.Duration(s.LastCheckpointDuration.Load()).Milliseconds()))
	gauge(j.d.lastSize, float64(s.LastCheckpointSize.Load()))
	gauge(j.d.lastFullSize, float64(s.LastCheckpointFullSize.Load()))
	gauge(j.d.lastCompletedID, float64(s.LastCheckpointID.Load()))
	gauge(j.d.lastBuffered, float64(s.LastCheckpointAlignmentBuffered.Load()))
	gauge(j.d.lastProcessed, float64(s.LastCheckpointProcessedData.Load()))
	gauge(j.d.lastPersisted, float64(s.LastCheckpointPersistedData.Load()))
	gauge(j.d.completed, float64(completed))
	gauge(j.d.failed, float64(failed))
	gauge(j.d.failedStorage, float64(s.FailedStorage.Load()))
	storageFailing := 0.0
	if s.StorageFailing.Load() {
		storageFailing = 1
	}
	gauge(j.d.storageFailing, storageFailing)
	for _, c := range s.FailedByCause() {
		gauge(j.d.failedByCause, float64(c.Count), c.Cause)
	}
	gauge(j.d.inProgress, float64(inProgress))
	gauge(j.d.total, float64(completed+failed+int64(inProgress)))
	gauge(j.d.restarts, float64(s.Restarts.Load()))
	gauge(j.d.lostTxns, float64(s.LostTransactions.Load()))
	gauge(j.d.restoredID, float64(s.RestoredCheckpoint.Load()))
	gauge(j.d.restoreTimestamp, float64(s.LastRestoreTimestamp.Load()))
	gauge(j.d.restoreDuration, float64(time.Duration(s.LastRestoreDuration.Load()).Milliseconds()))
	gauge(j.d.uptime, uptime(s, now))
	if on, _ := s.Autoscaler(); on {
		gauge(j.d.autoscalerRescales, float64(s.AutoscalerRescales.Load()))
	}
	if on, _ := s.Reactive(); on {
		gauge(j.d.reactiveRescales, float64(s.ReactiveRescales.Load()))
	}
	if j.weak != nil {
		j.weak.collect(ch, &s.Weak)
	}

	tasks := s.Tasks()
	attempt := s.Restarts.Load()
	j.mu.Lock()
	defer j.mu.Unlock()
	seen := make(map[taskKey]bool, len(tasks))
	for _, t := range tasks {
		k := taskKey{t.Vertex, t.Subtask}
		seen[k] = true
		m := j.meters[k]
		if m == nil {
			m = &taskMeters{in: meter{window: j.window}, out: meter{window: j.window}}
			j.meters[k] = m
		}
		labels := []string{strconv.Itoa(t.Vertex), t.Name, strconv.Itoa(t.Subtask)}
		gauge(j.d.recordsIn, float64(t.RecordsIn), labels...)
		gauge(j.d.recordsOut, float64(t.RecordsOut), labels...)
		if r, ok := m.in.observe(now, t.RecordsIn, attempt); ok {
			gauge(j.d.recordsInRate, r, labels...)
		}
		if r, ok := m.out.observe(now, t.RecordsOut, attempt); ok {
			gauge(j.d.recordsOutRate, r, labels...)
		}
		bp := 0.0
		if t.BackPressured {
			bp = 1
		}
		gauge(j.d.backPressured, bp, labels...)
		gauge(j.d.alignmentTime, float64(t.AlignmentTime.Nanoseconds()), labels...)
		gauge(j.d.creditsAvailable, float64(t.CreditsAvailable), labels...)
		gauge(j.d.inputWatermark, WatermarkValue(t.InputWatermark), labels...)
		gauge(j.d.outputWatermark, WatermarkValue(t.OutputWatermark), labels...)
		if lag, ok := WatermarkLag(now, t.OutputWatermark); ok {
			gauge(j.d.watermarkLag, lag, labels...)
		}
		gauge(j.d.lateDropped, float64(t.LateRecordsDropped), labels...)
		if tt := t.Time; tt != (jobstatus.TaskTime{}) {
			gauge(j.d.busyRate, float64(tt.BusyMsPerSecond), labels...)
			gauge(j.d.idleRate, float64(tt.IdleMsPerSecond), labels...)
			gauge(j.d.bpRate, float64(tt.BackPressuredMsPerSecond), labels...)
			gauge(j.d.busyTotal, float64(tt.Busy.Milliseconds()), labels...)
			gauge(j.d.idleTotal, float64(tt.Idle.Milliseconds()), labels...)
			gauge(j.d.bpTotal, float64(tt.BackPressured.Milliseconds()), labels...)
		}
		if a := t.Async; a != nil {
			gauge(j.d.asyncInFlight, float64(a.InFlight), labels...)
			gauge(j.d.asyncTimeouts, float64(a.Timeouts), labels...)
			gauge(j.d.asyncRetries, float64(a.Retries), labels...)
			gauge(j.d.asyncLat, float64(a.LatencyMean)/float64(time.Millisecond), labels...)
		}
		if j.weak != nil && t.Weak != nil {
			j.weak.collectTask(ch, t.Weak, labels...)
		}
	}
	// Forget the meters of tasks that are gone (the job ended, or a
	// rescaled restore has fewer subtasks).
	for k := range j.meters {
		if !seen[k] {
			delete(j.meters, k)
		}
	}
}

// uptime is Flink's: milliseconds since the job started while it runs, -1
// once it ended, 0 before it runs or while it restarts.
func uptime(s *jobstatus.JobStatus, now time.Time) float64 {
	switch s.State() {
	case jobstatus.StateRunning:
		start, _ := s.Times()
		return float64(now.Sub(start).Milliseconds())
	case jobstatus.StateFinished, jobstatus.StateFailed, jobstatus.StateCanceled:
		return -1
	}
	return 0
}
