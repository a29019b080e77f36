package rest

import (
	"net/http"
	"time"
)

// DashboardFeatures says which actions a web UI may offer (Flink's
// features of GET /config).
type DashboardFeatures struct {
	WebSubmit  bool `json:"web-submit"`
	WebCancel  bool `json:"web-cancel"`
	WebRescale bool `json:"web-rescale"`
	WebHistory bool `json:"web-history"`
}

// DashboardConfig is the body of GET /config, Flink's
// DashboardConfiguration with weir-version for flink-version.
type DashboardConfig struct {
	// RefreshInterval is how often a UI should poll, in milliseconds.
	RefreshInterval int64             `json:"refresh-interval"`
	TimezoneName    string            `json:"timezone-name"`
	TimezoneOffset  int64             `json:"timezone-offset"`
	Version         string            `json:"weir-version"`
	Features        DashboardFeatures `json:"features"`
}

// refreshInterval is Flink's default web.refresh-interval.
const refreshInterval = 3 * time.Second

func (a *api) dashboardConfig(w http.ResponseWriter, _ *http.Request) {
	now := a.cfg.Now()
	name, off := now.Zone()
	writeJSON(w, http.StatusOK, DashboardConfig{
		RefreshInterval: refreshInterval.Milliseconds(),
		TimezoneName:    name,
		TimezoneOffset:  int64(off) * 1000,
		Version:         a.cfg.Version,
		// Cancel is offered: PATCH /jobs/{jobid}?mode=cancel works for a
		// local run's job and says how to cancel otherwise.
		Features: DashboardFeatures{WebCancel: true},
	})
}
