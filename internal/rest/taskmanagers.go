package rest

import (
	"net/http"
)

// TaskManagerInfo is one entry of GET /taskmanagers, with Flink's field
// names.
type TaskManagerInfo struct {
	ID string `json:"id"`
	// Path is the address of its control-plane connection.
	Path        string `json:"path"`
	DataPort    string `json:"dataAddress"`
	MetricsAddr string `json:"metricsAddress,omitempty"`
	// Registered is when its session started, in Unix milliseconds.
	Registered  int64 `json:"registered"`
	SlotsNumber int   `json:"slotsNumber"`
	FreeSlots   int   `json:"freeSlots"`
}

// TaskManagers is the body of GET /taskmanagers.
type TaskManagers struct {
	TaskManagers []TaskManagerInfo `json:"taskmanagers"`
}

func (a *api) taskManagers(w http.ResponseWriter, _ *http.Request) {
	out := TaskManagers{TaskManagers: []TaskManagerInfo{}}
	if a.cfg.TaskManagers != nil {
		out.TaskManagers = append(out.TaskManagers, a.cfg.TaskManagers()...)
	}
	writeJSON(w, http.StatusOK, out)
}
