package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/network/remote"
)

// The TaskManager's Prometheus endpoint: per task of every job it runs,
// the counters its heartbeats carry, under Flink's names with the weir_
// prefix; the record data its data plane moved to and from other
// TaskManagers over the process's life (these outlive the tasks, so a
// scrape after a job ended still has what it sent); plus the Go and
// process collectors.

// metricsPorts is the range an unset --metrics-address tries, as Flink's
// Prometheus reporter does.
const metricsFirstPort, metricsLastPort = 9249, 9260

type tmMetrics struct {
	srv *http.Server
	ln  net.Listener
}

func startTaskManagerMetrics(addr string, h *executorHandler, traffic func() remote.TrafficStats, log *slog.Logger) (*tmMetrics, error) {
	if addr == "-" {
		return &tmMetrics{}, nil
	}
	var ln net.Listener
	var err error
	if addr == "" {
		for p := metricsFirstPort; p <= metricsLastPort; p++ {
			if ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				break
			}
		}
		if ln == nil {
			log.Warn("no free port in 127.0.0.1:9249-9260 for /metrics; serving none (set --metrics-address)")
			return &tmMetrics{}, nil
		}
	} else if ln, err = net.Listen("tcp", addr); err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("--metrics-address %s is in use: choose another port, or '-' to serve no metrics", addr)
		}
		return nil, fmt.Errorf("--metrics-address %s: %w", addr, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), taskCollector{h: h}, trafficCollector{traffic}, gaugeCollector{h.Reports})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(reg, log))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &tmMetrics{srv: srv, ln: ln}, nil
}

func (m *tmMetrics) addr() net.Addr {
	if m.ln == nil {
		return nil
	}
	return m.ln.Addr()
}

func (m *tmMetrics) stop() {
	if m.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
}

var (
	taskLabels   = []string{"job_name", "task_id", "subtask_index"}
	descRecIn    = prometheus.NewDesc("weir_taskmanager_job_task_numRecordsIn", "Records the task received.", taskLabels, nil)
	descRecOut   = prometheus.NewDesc("weir_taskmanager_job_task_numRecordsOut", "Records the task emitted.", taskLabels, nil)
	descBackPres = prometheus.NewDesc("weir_taskmanager_job_task_isBackPressured", "1 if the task waited for output credit since the last sample.", taskLabels, nil)
	descAlign    = prometheus.NewDesc("weir_taskmanager_job_task_checkpointAlignmentTime", "Nanoseconds the task's latest checkpoint alignment took, first barrier to last.", taskLabels, nil)
	descCredits  = prometheus.NewDesc("weir_taskmanager_job_task_creditsAvailable", "Credits the task's output channels hold now.", taskLabels, nil)
	descInWM     = prometheus.NewDesc("weir_taskmanager_job_task_"+metrics.NameInputWatermark, metrics.HelpInputWatermark, taskLabels, nil)
	descOutWM    = prometheus.NewDesc("weir_taskmanager_job_task_"+metrics.NameOutputWatermark, metrics.HelpOutputWatermark, taskLabels, nil)
	descWMLag    = prometheus.NewDesc("weir_taskmanager_job_task_"+metrics.NameWatermarkLag, metrics.HelpWatermarkLag, taskLabels, nil)
	descLate     = prometheus.NewDesc("weir_taskmanager_job_task_"+metrics.NameLateRecordsDropped, metrics.HelpLateRecordsDropped, taskLabels, nil)
	descBusy     = prometheus.NewDesc("weir_taskmanager_job_task_busyTimeMsPerSecond", "Milliseconds per second the task was busy (neither idle nor backpressured), over its latest window of one to two seconds.", taskLabels, nil)
	descIdle     = prometheus.NewDesc("weir_taskmanager_job_task_idleTimeMsPerSecond", "Milliseconds per second the task waited for input, over its latest window of one to two seconds.", taskLabels, nil)
	descBPTime   = prometheus.NewDesc("weir_taskmanager_job_task_backPressuredTimeMsPerSecond", "Milliseconds per second the task waited for output credit, over its latest window of one to two seconds.", taskLabels, nil)
)

// taskCollector reads the handler's task reports at each scrape.
type taskCollector struct{ h *executorHandler }

func (c taskCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRecIn
	ch <- descRecOut
	ch <- descBackPres
	ch <- descAlign
	ch <- descCredits
	ch <- descInWM
	ch <- descOutWM
	ch <- descWMLag
	ch <- descLate
	ch <- descBusy
	ch <- descIdle
	ch <- descBPTime
}

func (c taskCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, r := range c.h.Reports() {
		e := r.GetExec()
		l := []string{r.GetJob(), strconv.Itoa(int(e.GetVertex())), strconv.Itoa(int(e.GetSubtask()))}
		ch <- prometheus.MustNewConstMetric(descRecIn, prometheus.CounterValue, float64(r.GetRecordsIn()), l...)
		ch <- prometheus.MustNewConstMetric(descRecOut, prometheus.CounterValue, float64(r.GetRecordsOut()), l...)
		bp := 0.0
		if r.GetBackPressured() {
			bp = 1
		}
		ch <- prometheus.MustNewConstMetric(descBackPres, prometheus.GaugeValue, bp, l...)
		ch <- prometheus.MustNewConstMetric(descAlign, prometheus.GaugeValue, float64(r.GetAlignmentTimeNanos()), l...)
		ch <- prometheus.MustNewConstMetric(descCredits, prometheus.GaugeValue, float64(r.GetCreditsAvailable()), l...)
		if r.GetBusyNanos()+r.GetIdleNanos()+r.GetBackPressuredNanos() > 0 {
			ch <- prometheus.MustNewConstMetric(descBusy, prometheus.GaugeValue, float64(r.GetBusyMsPerSecond()), l...)
			ch <- prometheus.MustNewConstMetric(descIdle, prometheus.GaugeValue, float64(r.GetIdleMsPerSecond()), l...)
			ch <- prometheus.MustNewConstMetric(descBPTime, prometheus.GaugeValue, float64(r.GetBackPressuredMsPerSecond()), l...)
		}
		in, out := reportedWatermark(r.InputWatermark), reportedWatermark(r.OutputWatermark)
		ch <- prometheus.MustNewConstMetric(descInWM, prometheus.GaugeValue, metrics.WatermarkValue(in), l...)
		ch <- prometheus.MustNewConstMetric(descOutWM, prometheus.GaugeValue, metrics.WatermarkValue(out), l...)
		if lag, ok := metrics.WatermarkLag(now, out); ok {
			ch <- prometheus.MustNewConstMetric(descWMLag, prometheus.GaugeValue, lag, l...)
		}
		ch <- prometheus.MustNewConstMetric(descLate, prometheus.CounterValue, float64(r.GetLateRecordsDropped()), l...)
	}
}

var (
	descBytesOut   = prometheus.NewDesc("weir_taskmanager_numBytesOutRemote", "Encoded record bytes sent to other TaskManagers, all jobs, since the process started.", nil, nil)
	descBytesIn    = prometheus.NewDesc("weir_taskmanager_numBytesInRemote", "Encoded record bytes received from other TaskManagers, all jobs, since the process started.", nil, nil)
	descRecordsOut = prometheus.NewDesc("weir_taskmanager_numRecordsOutRemote", "Records sent to other TaskManagers, all jobs, since the process started.", nil, nil)
	descRecordsIn  = prometheus.NewDesc("weir_taskmanager_numRecordsInRemote", "Records received from other TaskManagers, all jobs, since the process started.", nil, nil)
)

// trafficCollector reads the data plane's counters at each scrape.
type trafficCollector struct{ stats func() remote.TrafficStats }

func (c trafficCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descBytesOut
	ch <- descBytesIn
	ch <- descRecordsOut
	ch <- descRecordsIn
}

func (c trafficCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(descBytesOut, prometheus.CounterValue, float64(s.BytesSent))
	ch <- prometheus.MustNewConstMetric(descBytesIn, prometheus.CounterValue, float64(s.BytesReceived))
	ch <- prometheus.MustNewConstMetric(descRecordsOut, prometheus.CounterValue, float64(s.RecordsSent))
	ch <- prometheus.MustNewConstMetric(descRecordsIn, prometheus.CounterValue, float64(s.RecordsReceived))
}

// gaugeCollector exports the gauges the tasks' operators published
// (weir.RuntimeContext.SetGauge) under their own names, with the task
// series' labels besides theirs, as the JobManager's /metrics does. The
// names are known only at a scrape: an unchecked collector.
type gaugeCollector struct{ reports func() []*pb.TaskReport }

func (gaugeCollector) Describe(chan<- *prometheus.Desc) {}

func (c gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.reports() {
		e := r.GetExec()
		for _, g := range r.GetGauges() {
			names := append([]string{}, taskLabels...)
			values := []string{r.GetJob(), strconv.Itoa(int(e.GetVertex())), strconv.Itoa(int(e.GetSubtask()))}
			for i := 0; i+1 < len(g.GetLabels()); i += 2 {
				names = append(names, g.GetLabels()[i])
				values = append(values, g.GetLabels()[i+1])
			}
			d := prometheus.NewDesc(g.GetName(), metrics.HelpOperatorGauge, names, nil)
			m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, g.GetValue(), values...)
			if err != nil {
				m = prometheus.NewInvalidMetric(d, err)
			}
			ch <- m
		}
	}
}
