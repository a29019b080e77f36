package rest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/jobstatus"
)

// ClusterOverview is the body of GET /overview.
type ClusterOverview struct {
	JobsRunning   int    `json:"jobs-running"`
	JobsFinished  int    `json:"jobs-finished"`
	JobsCancelled int    `json:"jobs-cancelled"`
	JobsFailed    int    `json:"jobs-failed"`
	Version       string `json:"weir-version"`
	// TaskManagers, SlotsTotal and SlotsAvailable count the cluster's
	// registered TaskManagers and their slots (0 in local mode).
	TaskManagers   int `json:"taskmanagers"`
	SlotsTotal     int `json:"slots-total"`
	SlotsAvailable int `json:"slots-available"`
	// The JobManager's part under high availability (absent without):
	// whether this JobManager leads, and who does. A standby answers for
	// itself too; GET /overview is never forwarded.
	Leader            *bool  `json:"leader,omitempty"`
	LeaderID          string `json:"leader-id,omitempty"`
	LeaderRESTAddress string `json:"leader-rest-address,omitempty"`
	LeaderTerm        int64  `json:"leader-term,omitempty"`
	LeaderChanges     int64  `json:"leader-changes,omitempty"`
}

// LeaderStatus is a JobManager's view of leadership under high
// availability, for GET /overview.
type LeaderStatus struct {
	// Leader is true while this JobManager leads.
	Leader bool
	// ID, RESTAddress and Term name the current leader (empty and 0 while
	// none is known).
	ID          string
	RESTAddress string
	Term        int64
	// Changes counts the leaderships this JobManager has seen begin.
	Changes int64
}

func (a *api) overview(w http.ResponseWriter, r *http.Request) {
	o := ClusterOverview{Version: a.cfg.Version}
	if a.cfg.Leadership != nil {
		l := a.cfg.Leadership()
		o.Leader = &l.Leader
		o.LeaderID, o.LeaderRESTAddress, o.LeaderTerm, o.LeaderChanges = l.ID, l.RESTAddress, l.Term, l.Changes
	}
	if a.cfg.TaskManagers != nil {
		for _, tm := range a.cfg.TaskManagers() {
			o.TaskManagers++
			o.SlotsTotal += tm.SlotsNumber
			o.SlotsAvailable += tm.FreeSlots
		}
	}
	for _, j := range a.cfg.Jobs() {
		switch j.Status().State() {
		case jobstatus.StateFinished:
			o.JobsFinished++
		case jobstatus.StateCanceled:
			o.JobsCancelled++
		case jobstatus.StateFailed:
			o.JobsFailed++
		default: // created, running and restarting jobs hold resources
			o.JobsRunning++
		}
	}
	writeJSON(w, http.StatusOK, o)
}

// JobIDStatus is one entry of GET /jobs.
type JobIDStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// JobIDs is the body of GET /jobs.
type JobIDs struct {
	Jobs []JobIDStatus `json:"jobs"`
}

func (a *api) jobs(w http.ResponseWriter, r *http.Request) {
	out := JobIDs{Jobs: []JobIDStatus{}}
	for _, j := range a.cfg.Jobs() {
		out.Jobs = append(out.Jobs, JobIDStatus{ID: j.ID(), Status: string(j.Status().State())})
	}
	writeJSON(w, http.StatusOK, out)
}

// JobTimes are a job's start, end and duration in Flink's form:
// milliseconds, -1 for a time not reached yet.
type JobTimes struct {
	StartTime int64 `json:"start-time"`
	EndTime   int64 `json:"end-time"`
	Duration  int64 `json:"duration"`
}

func jobTimes(s *jobstatus.JobStatus, now time.Time) JobTimes {
	start, end := s.Times()
	t := JobTimes{StartTime: millis(start), EndTime: millis(end), Duration: -1}
	switch {
	case start.IsZero():
	// Durations are differences of the times, not of their unix
	// milliseconds: on the monotonic clock, so a step of the wall clock
	// does not make a running job an hour older (or younger than 0).
	case end.IsZero():
		t.Duration = max(now.Sub(start).Milliseconds(), 0)
	default:
		// The end follows from the duration, in whole milliseconds, so
		// that end-time − start-time == duration exactly (the two
		// truncated wall times could differ from it by 1).
		t.Duration = max(end.Sub(start).Milliseconds(), 0)
		t.EndTime = t.StartTime + t.Duration
	}
	return t
}

// JobSummary is one entry of GET /jobs/overview.
type JobSummary struct {
	ID    string `json:"jid"`
	Name  string `json:"name"`
	State string `json:"state"`
	JobTimes
	LastModification int64 `json:"last-modification"`
}

// JobsOverview is the body of GET /jobs/overview.
type JobsOverview struct {
	Jobs []JobSummary `json:"jobs"`
}

func (a *api) jobsOverview(w http.ResponseWriter, r *http.Request) {
	now := a.cfg.Now()
	out := JobsOverview{Jobs: []JobSummary{}}
	for _, j := range a.cfg.Jobs() {
		s := j.Status()
		t := jobTimes(s, now)
		out.Jobs = append(out.Jobs, JobSummary{ID: j.ID(), Name: j.Name(), State: string(s.State()), JobTimes: t, LastModification: max(t.StartTime, t.EndTime)})
	}
	writeJSON(w, http.StatusOK, out)
}

// VertexMetrics are a vertex's record counts summed over its subtasks
// (Flink's read-records / write-records), for the running attempt.
type VertexMetrics struct {
	ReadRecords  int64 `json:"read-records"`
	WriteRecords int64 `json:"write-records"`
}

// JobVertex is one vertex (operator chain) of GET /jobs/{jobid}.
type JobVertex struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Parallelism int    `json:"parallelism"`
	// Subtasks is how many of its subtasks the running attempt deploys.
	Subtasks int           `json:"running-subtasks"`
	Metrics  VertexMetrics `json:"metrics"`
}

// JobDetails is the body of GET /jobs/{jobid}.
type JobDetails struct {
	ID    string `json:"jid"`
	Name  string `json:"name"`
	State string `json:"state"`
	JobTimes
	Now         int64       `json:"now"`
	Restarts    int64       `json:"restarts"`
	LastFailure string      `json:"last-failure,omitempty"`
	Vertices    []JobVertex `json:"vertices"`
	// Weak is the failover accounting of a job in WEAKLY_CONSISTENT mode
	// (weak.go); absent in the other modes.
	Weak *WeakAccounting `json:"weak,omitempty"`
}

func (a *api) job(w http.ResponseWriter, r *http.Request, j Job) {
	now := a.cfg.Now()
	s := j.Status()
	d := JobDetails{
		ID: j.ID(), Name: j.Name(), State: string(s.State()), JobTimes: jobTimes(s, now), Now: now.UnixMilli(),
		Restarts: s.Restarts.Load(), LastFailure: s.LastFailure(), Vertices: []JobVertex{},
		Weak: weakAccounting(j),
	}
	idx := map[int]int{}
	for _, v := range s.Vertices() {
		idx[v.ID] = len(d.Vertices)
		d.Vertices = append(d.Vertices, JobVertex{ID: strconv.Itoa(v.ID), Name: v.Name, Parallelism: v.Parallelism})
	}
	for _, t := range s.Tasks() {
		i, ok := idx[t.Vertex]
		if !ok {
			continue
		}
		v := &d.Vertices[i]
		v.Subtasks++
		v.Metrics.ReadRecords += t.RecordsIn
		v.Metrics.WriteRecords += t.RecordsOut
	}
	writeJSON(w, http.StatusOK, d)
}
