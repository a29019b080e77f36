package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/rest"
	"github.com/weirstream/weir/internal/runtime"
)

// jmREST is the JobManager's REST API and /metrics: every job it runs, the
// TaskManagers and their slots.
type jmREST struct {
	srv *rest.Server
	reg *prometheus.Registry

	mu      sync.Mutex
	metrics map[string]*metrics.Job
}

// restJob is a managed job as the REST API sees it.
type restJob struct{ j *managedJob }

func (r restJob) ID() string                 { return r.j.rec.Spec.Name }
func (r restJob) Name() string               { return r.j.rec.Spec.Name }
func (r restJob) Status() *runtime.JobStatus { return r.j.status }
func (r restJob) Config() *config.Config     { return r.j.conf }

func startJobManagerREST(cfg JobManagerConfig, m *jobManager) (*jmREST, error) {
	r := &jmREST{reg: prometheus.NewRegistry(), metrics: map[string]*metrics.Job{}}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.onStart = r.jobStarted
	if cfg.RESTAddress == "" {
		return r, nil
	}
	ln, err := rest.Listen(cfg.RESTAddress, cfg.AllowNonLoopbackREST)
	if errors.Is(err, rest.ErrRemoteAddress) {
		return nil, fmt.Errorf("--rest-address: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("--rest-address: %w", err)
	}
	h := rest.NewHandler(rest.Config{
		Jobs: func() []rest.Job {
			var out []rest.Job
			for _, j := range m.running() {
				out = append(out, restJob{j})
			}
			return out
		},
		Metrics:      metrics.Handler(r.reg, cfg.Logger),
		Logger:       cfg.Logger,
		TaskManagers: func() []rest.TaskManagerInfo { return taskManagerInfos(m.dispatcher()) },
	})
	r.srv = rest.Serve(ln, h, cfg.Logger)
	m.restAddr = r.srv.Addr().String()
	return r, nil
}

// jobStarted exposes a job's metrics, replacing those of an earlier job
// of the same name.
func (r *jmREST) jobStarted(j *managedJob) {
	name := j.rec.Spec.Name
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.metrics[name]; old != nil {
		old.Unregister()
	}
	mj, err := metrics.NewJob(r.reg, name, name, j.status, metrics.Options{})
	if err != nil {
		return
	}
	r.metrics[name] = mj
}

func (r *jmREST) addr() net.Addr {
	if r.srv == nil {
		return nil
	}
	return r.srv.Addr()
}

func (r *jmREST) stop() {
	if r.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

// taskManagerInfos lists the registered TaskManagers with their slots.
func taskManagerInfos(d *Dispatcher) []rest.TaskManagerInfo {
	if d == nil {
		return nil
	}
	free := map[string]TaskManagerSlots{}
	for _, s := range d.TaskManagers() {
		free[s.TM] = s
	}
	var out []rest.TaskManagerInfo
	for _, s := range d.TaskManagers() {
		tm := d.TaskManager(s.TM)
		if tm == nil {
			continue
		}
		out = append(out, rest.TaskManagerInfo{
			ID: tm.ID, Path: tm.Addr, DataPort: tm.DataAddress, MetricsAddr: tm.MetricsAddress,
			Registered: tm.Registered.UnixMilli(), SlotsNumber: s.Total, FreeSlots: s.Free,
		})
	}
	return out
}
