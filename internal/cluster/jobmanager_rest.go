package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dashboard"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/rest"
)

// jmREST is the JobManager's REST API and /metrics: every job it runs, the
// TaskManagers and their slots. The server lives as long as the process;
// what it serves changes with the JobManager's role under high
// availability (lead: the jobs of the term; standby: GET /overview and
// /metrics for itself, every other path redirected to the leader).
type jmREST struct {
	srv *rest.Server
	reg *prometheus.Registry
	cfg JobManagerConfig
	h   atomic.Pointer[http.Handler]

	mu      sync.Mutex
	metrics map[string]*metrics.Job
}

// restJob is a managed job as the REST API sees it.
type restJob struct{ j *managedJob }

func (r restJob) ID() string                   { return r.j.rec.Spec.Name }
func (r restJob) Name() string                 { return r.j.rec.Spec.Name }
func (r restJob) Status() *jobstatus.JobStatus { return r.j.status }
func (r restJob) Control() jobstatus.Control   { return r.j.restControl() }
func (r restJob) Config() *config.Config       { return r.j.conf }

// startJobManagerREST binds the REST address (none if it is empty) and
// serves 503 until lead or standby says what to serve.
func startJobManagerREST(cfg JobManagerConfig) (*jmREST, error) {
	r := &jmREST{reg: prometheus.NewRegistry(), cfg: cfg, metrics: map[string]*metrics.Job{}}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var starting http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"errors":["the JobManager is starting"]}` + "\n"))
	})
	r.h.Store(&starting)
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
	if cfg.RESTTLS != nil {
		ln = tls.NewListener(ln, cfg.RESTTLS.Server)
	}
	// The token guards every state: starting, leading and standby.
	r.srv = rest.Serve(ln, rest.RequireToken(cfg.RESTToken, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		(*r.h.Load()).ServeHTTP(w, req)
	})), cfg.Logger)
	return r, nil
}

// lead serves m's jobs; leadership is nil without high availability.
func (r *jmREST) lead(m *jobManager, leadership func() rest.LeaderStatus) {
	m.onStart = r.jobStarted
	if r.srv != nil {
		m.restAddr = r.srv.Addr().String()
	}
	var h http.Handler = rest.NewHandler(rest.Config{
		Jobs: func() []rest.Job {
			var out []rest.Job
			for _, j := range m.running() {
				out = append(out, restJob{j})
			}
			return out
		},
		Metrics:      metrics.Handler(r.reg, r.cfg.Logger),
		Logger:       r.cfg.Logger,
		TaskManagers: func() []rest.TaskManagerInfo { return taskManagerInfos(m.dispatcher()) },
		Leadership:   leadership,
		UI:           dashboard.Handler(),

		ClusterConfig:           r.cfg.RESTConfig,
		SavepointsDir:           r.cfg.SavepointsDir,
		AllowAnySavepointTarget: r.cfg.AllowAnySavepointTarget,
	})
	r.h.Store(&h)
}

// standby serves a standby JobManager: GET /overview (with who leads)
// and /metrics answer for this process; every other request is
// redirected (307, method and body kept) to the leader's REST address,
// or answered 503 while no leader is known.
func (r *jmREST) standby(leadership func() rest.LeaderStatus) {
	r.endTerm()
	api := rest.NewHandler(rest.Config{
		Jobs:       func() []rest.Job { return nil },
		Metrics:    metrics.Handler(r.reg, r.cfg.Logger),
		Logger:     r.cfg.Logger,
		Leadership: leadership,
		// A standby is alive but not ready: a Service's readiness probe
		// sends traffic to the leader only.
		Ready: func() error { return errors.New("this JobManager is a standby") },
	})
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if p := req.URL.Path; p == "/overview" || p == "/metrics" || p == "/healthz" || p == "/readyz" {
			api.ServeHTTP(w, req)
			return
		}
		l := leadership()
		if l.RESTAddress == "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string][]string{"errors": {"this JobManager is a standby and no leader with a REST address is known yet: retry in a moment (GET /overview shows the leader)"}})
			return
		}
		http.Redirect(w, req, "http://"+l.RESTAddress+req.URL.RequestURI(), http.StatusTemporaryRedirect)
	})
	r.h.Store(&h)
}

// endTerm drops the metrics of the jobs of a term that ended: they run on
// the next leader now.
func (r *jmREST) endTerm() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, mj := range r.metrics {
		mj.Unregister()
		delete(r.metrics, name)
	}
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
	// A WEAKLY_CONSISTENT job's failover figures are the TaskManagers'
	// reports, summed (weakFigures).
	weak := j.conf != nil && j.conf.String(config.CheckpointingMode) == config.ModeWeak
	mj, err := metrics.NewJob(r.reg, name, name, j.status, metrics.Options{Weak: weak})
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
