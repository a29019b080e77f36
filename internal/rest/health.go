package rest

import "net/http"

// Health is the body of GET /healthz and /readyz.
type Health struct {
	Status string `json:"status"`
}

// healthz answers 200 while the process serves: a liveness probe.
func (a *api) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
}

// readyz answers 200 once the process is ready (Config.Ready), else 503
// with the reason: a readiness probe.
func (a *api) readyz(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Ready != nil {
		if err := a.cfg.Ready(); err != nil {
			a.fail(w, r, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, Health{Status: "ready"})
}
