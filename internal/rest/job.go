package rest

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobstatus"
)

// Job is one job the API serves.
type Job interface {
	// ID is the job's id in paths (/jobs/{jobid}); in local mode it is the
	// job name.
	ID() string
	// Name is the name the job was executed with.
	Name() string
	// Status is the job's live monitoring surface.
	Status() *jobstatus.JobStatus
	// Control takes the job's commands: the POST endpoints' checkpoints,
	// savepoints and stops (never nil; a job that does not run answers
	// them with jobstatus.ErrNotRunning).
	Control() jobstatus.Control
	// Config is the configuration the job runs with; the checkpointing
	// settings come from it.
	Config() *config.Config
}

// Config configures the API handler.
type Config struct {
	// Jobs lists the jobs to serve; it is called once per request. Required.
	Jobs func() []Job
	// Metrics serves GET /metrics (nil: the path answers 404).
	Metrics http.Handler
	// Now is the clock for durations of running jobs and checkpoints (nil:
	// time.Now).
	Now func() time.Time
	// TriggerTimeout bounds how long POST /jobs/{jobid}/checkpoints waits
	// for the coordinator to take the request (0: 10 s).
	TriggerTimeout time.Duration
	// Logger logs failed responses (nil: silent).
	Logger *slog.Logger
	// Version is reported by GET /overview as weir-version.
	Version string
	// TaskManagers lists the cluster's TaskManagers for GET /taskmanagers
	// and the slot counts of GET /overview; nil in local mode, where the
	// path answers with the one in-process TaskManager left out (an
	// empty list).
	TaskManagers func() []TaskManagerInfo
	// Leadership reports the JobManager's leadership for GET /overview
	// under high availability; nil without it.
	Leadership func() LeaderStatus
	// UI serves the web dashboard at GET / and its assets under GET /ui/
	// (nil: both answer 404). internal/dashboard provides it.
	UI http.Handler
	// Ready reports whether the process is ready to serve (GET /readyz
	// answers 503 with its error); nil: always ready.
	Ready func() error
	// ClusterConfig is the process's configuration, served by GET
	// /jobmanager/config with secrets hidden (nil: an empty list).
	ClusterConfig *config.Config
	// SavepointsDir is state.savepoints.dir: savepoints requested through
	// the API go under it (targets.go); empty: only with
	// AllowAnySavepointTarget, and then with a target.
	SavepointsDir string
	// AllowAnySavepointTarget (rest.savepoints.allow-any-target) lets a
	// request name any target folder.
	AllowAnySavepointTarget bool
	// Token, if not empty, is the bearer token every request but GET
	// /healthz and /readyz must carry (security.rest.token-file; see
	// RequireToken).
	Token string
}
