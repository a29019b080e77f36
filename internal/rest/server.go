package rest

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
)

// api holds the handlers' shared configuration.
type api struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
	ops *operations
}

// Handler is the API's HTTP handler.
type Handler struct {
	a *api
	h http.Handler
}

// ServeHTTP serves r.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// NewHandler returns the API's HTTP handler. It panics if cfg.Jobs is nil
// (a programming error, not a runtime condition).
func NewHandler(cfg Config) *Handler {
	if cfg.Jobs == nil {
		panic("rest: Config.Jobs is nil")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TriggerTimeout <= 0 {
		cfg.TriggerTimeout = 10 * time.Second
	}
	a := &api{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), ops: &operations{}}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	m := a.mux
	m.HandleFunc("GET /healthz", a.healthz)
	m.HandleFunc("GET /readyz", a.readyz)
	m.HandleFunc("GET /config", a.dashboardConfig)
	m.HandleFunc("GET /overview", a.overview)
	m.HandleFunc("GET /jobmanager/config", a.jobManagerConfig)
	m.HandleFunc("GET /jobmanager/metrics", a.jobManagerMetrics)
	m.HandleFunc("GET /taskmanagers/{tmid}", a.taskManagerDetails)
	m.HandleFunc("GET /taskmanagers/{tmid}/metrics", a.taskManagerMetrics)
	m.HandleFunc("GET /jobs", a.jobs)
	m.HandleFunc("GET /taskmanagers", a.taskManagers)
	m.HandleFunc("GET /jobs/overview", a.jobsOverview)
	m.HandleFunc("GET /jobs/{jobid}", a.withJob(a.job))
	m.HandleFunc("GET /jobs/{jobid}/plan", a.withJob(a.plan))
	m.HandleFunc("GET /jobs/{jobid}/config", a.withJob(a.jobConfig))
	m.HandleFunc("GET /jobs/{jobid}/exceptions", a.withJob(a.exceptions))
	m.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}", a.withJob(a.vertexDetails))
	m.HandleFunc("GET /jobs/{jobid}/checkpoints", a.withJob(a.checkpoints))
	m.HandleFunc("POST /jobs/{jobid}/checkpoints", a.withJob(a.trigger))
	m.HandleFunc("GET /jobs/{jobid}/checkpoints/config", a.withJob(a.checkpointConfig))
	m.HandleFunc("GET /jobs/{jobid}/checkpoints/details/{checkpointid}", a.withJob(a.checkpointDetails))
	m.HandleFunc("GET /jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}", a.withJob(a.checkpointSubtasks))
	m.HandleFunc("GET /jobs/{jobid}/checkpoints/{triggerid}", a.withJob(a.triggerStatus))
	m.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/backpressure", a.withJob(a.backpressure))
	m.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/watermarks", a.withJob(a.watermarks))
	m.HandleFunc("POST /jobs/{jobid}/savepoints", a.withJob(a.savepoint))
	m.HandleFunc("GET /jobs/{jobid}/savepoints/{triggerid}", a.operationStatus("savepoint"))
	m.HandleFunc("POST /jobs/{jobid}/stop", a.withJob(a.stop))
	m.HandleFunc("GET /jobs/{jobid}/resource-requirements", a.withJob(a.resourceRequirements))
	m.HandleFunc("PUT /jobs/{jobid}/resource-requirements", a.withJob(a.rescale))
	m.HandleFunc("GET /jobs/{jobid}/autoscaler", a.withJob(a.autoscaler))
	m.HandleFunc("GET /jobs/{jobid}/stop/{triggerid}", a.operationStatus("stop"))
	m.HandleFunc("PATCH /jobs/{jobid}", a.withJob(a.cancel))
	if cfg.Metrics != nil {
		m.Handle("GET /metrics", cfg.Metrics)
	}
	if cfg.UI != nil {
		m.Handle("GET /{$}", cfg.UI)
		m.Handle("GET /ui/", cfg.UI)
	}
	return &Handler{a: a, h: RequireToken(cfg.Token, a)}
}

// maxBody bounds request bodies; the API's bodies are a few bytes of JSON.
const maxBody = 1 << 20

// methods the API answers; used to tell 405 from 404.
var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch}

// ServeHTTP routes r; requests no pattern matches get a JSON error: 405
// with Allow if the path exists for another method, else 404.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if _, pattern := a.mux.Handler(r); pattern != "" {
		a.mux.ServeHTTP(w, r)
		return
	}
	var allow []string
	for _, m := range methods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := a.mux.Handler(probe); p != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		if slices.Contains(allow, http.MethodGet) {
			allow = append(allow, http.MethodHead)
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		a.fail(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, " or ")))
		return
	}
	a.fail(w, r, http.StatusNotFound, fmt.Sprintf("no such path %s; see docs/rest.md for the endpoints", r.URL.Path))
}

// withJob resolves {jobid} and answers 404 for an unknown job.
func (a *api) withJob(h func(http.ResponseWriter, *http.Request, Job)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("jobid")
		var ids []string
		for _, j := range a.cfg.Jobs() {
			if j.ID() == id {
				h(w, r, j)
				return
			}
			ids = append(ids, j.ID())
		}
		a.fail(w, r, http.StatusNotFound, fmt.Sprintf("job %q not found; known jobs: %s (GET /jobs lists them)", id, quoteAll(ids)))
	}
}

func quoteAll(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// ErrorResponse is the body of every error answer, as Flink's.
type ErrorResponse struct {
	Errors []string `json:"errors"`
}

func (a *api) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	a.log.Info("rest: request failed", "method", r.Method, "path", r.URL.Path, "status", code, "error", msg)
	writeJSON(w, code, ErrorResponse{Errors: []string{msg}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a programming error (an unsupported type) gets here.
		code, b = http.StatusInternalServerError, []byte(`{"errors":["encode response: `+strings.ReplaceAll(err.Error(), `"`, `'`)+`"]}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// millis is t in Flink's form: milliseconds since the epoch, -1 if unset.
func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}
