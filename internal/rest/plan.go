package rest

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/weirstream/weir/internal/jobstatus"
)

// PlanInput is an input edge of a plan node (Flink's JobPlanInfo input).
type PlanInput struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

// PlanNode is one vertex of GET /jobs/{jobid}/plan.
type PlanNode struct {
	ID               string      `json:"id"`
	Parallelism      int         `json:"parallelism"`
	Operator         string      `json:"operator"`
	OperatorStrategy string      `json:"operator_strategy"`
	Description      string      `json:"description"`
	Inputs           []PlanInput `json:"inputs,omitempty"`
}

// Plan is the plan of a job: its vertices and their inputs.
type Plan struct {
	JID   string     `json:"jid"`
	Name  string     `json:"name"`
	Type  string     `json:"type"`
	Nodes []PlanNode `json:"nodes"`
}

// JobPlan is the body of GET /jobs/{jobid}/plan (Flink's JobPlanInfo).
type JobPlan struct {
	Plan Plan `json:"plan"`
}

// PlanEdge is an edge of the job graph: vertex From feeds vertex To with
// Strategy (FORWARD, HASH, REBALANCE, …).
type PlanEdge struct {
	From, To int
	Strategy string
}

// PlanEdger is implemented by a Job that knows its graph's edges; the plan
// of a Job that is not one lists its vertices without inputs.
type PlanEdger interface {
	PlanEdges() []PlanEdge
}

func (a *api) plan(w http.ResponseWriter, _ *http.Request, j Job) {
	p := Plan{JID: j.ID(), Name: j.Name(), Type: "STREAMING", Nodes: []PlanNode{}}
	var edges []PlanEdge
	if e, ok := j.(PlanEdger); ok {
		edges = e.PlanEdges()
	}
	for _, v := range j.Status().Vertices() {
		n := PlanNode{ID: strconv.Itoa(v.ID), Parallelism: v.Parallelism, Operator: "", OperatorStrategy: "", Description: v.Name}
		for _, e := range edges {
			if e.To == v.ID {
				n.Inputs = append(n.Inputs, PlanInput{Num: len(n.Inputs), ID: strconv.Itoa(e.From), ShipStrategy: e.Strategy, Exchange: "pipelined_bounded"})
			}
		}
		p.Nodes = append(p.Nodes, n)
	}
	writeJSON(w, http.StatusOK, JobPlan{Plan: p})
}

// SubtaskMetrics are a subtask's counters in Flink's IOMetricsInfo names,
// with weir's back pressure and watermarks.
type SubtaskMetrics struct {
	ReadRecords          int64 `json:"read-records"`
	ReadRecordsComplete  bool  `json:"read-records-complete"`
	WriteRecords         int64 `json:"write-records"`
	WriteRecordsComplete bool  `json:"write-records-complete"`
	BackPressured        bool  `json:"is-back-pressured"`
	// AlignmentTime is the latest snapshot's alignment, in milliseconds.
	AlignmentTime      int64 `json:"checkpoint-alignment-time"`
	CreditsAvailable   int   `json:"credits-available"`
	InputWatermark     int64 `json:"current-input-watermark"`
	OutputWatermark    int64 `json:"current-output-watermark"`
	LateRecordsDropped int64 `json:"num-late-records-dropped"`
	// The subtask's running time split, milliseconds in its current
	// attempt (Flink's accumulated-*-time) and per second over its latest
	// window (jobstatus.TaskTime).
	AccumulatedBusyTime          int64 `json:"accumulated-busy-time"`
	AccumulatedIdleTime          int64 `json:"accumulated-idle-time"`
	AccumulatedBackPressuredTime int64 `json:"accumulated-backpressured-time"`
	BusyTimeMsPerSecond          int64 `json:"busy-time-ms-per-second"`
	IdleTimeMsPerSecond          int64 `json:"idle-time-ms-per-second"`
	BackPressuredTimeMsPerSecond int64 `json:"backpressured-time-ms-per-second"`
	// Weak is the subtask's accounting in WEAKLY_CONSISTENT mode, over
	// its attempts; absent in the other modes.
	Weak *SubtaskWeak `json:"weak,omitempty"`
}

// SubtaskWeak is one subtask's share of the job's "weak" object
// (jobstatus.TaskWeakStats); the recovery in milliseconds.
type SubtaskWeak struct {
	Failures             int64 `json:"failures"`
	Restarts             int64 `json:"restarts"`
	RecordsReplayed      int64 `json:"records-replayed"`
	RecordsLost          int64 `json:"records-lost"`
	RecordsDuplicated    int64 `json:"records-duplicated"`
	LastRecoveryDuration int64 `json:"last-recovery-duration"`
}

func subtaskWeak(w *jobstatus.TaskWeakStats) *SubtaskWeak {
	if w == nil {
		return nil
	}
	return &SubtaskWeak{Failures: w.Failures, Restarts: w.Restarts, RecordsReplayed: w.Replayed, RecordsLost: w.Lost, RecordsDuplicated: w.Duplicated, LastRecoveryDuration: w.LastRecovery.Milliseconds()}
}

// VertexSubtask is one subtask of GET /jobs/{jobid}/vertices/{vertexid}.
type VertexSubtask struct {
	Subtask int            `json:"subtask"`
	Status  string         `json:"status"`
	Attempt int64          `json:"attempt"`
	Metrics SubtaskMetrics `json:"metrics"`
}

// VertexDetails is the body of GET /jobs/{jobid}/vertices/{vertexid}
// (Flink's JobVertexDetailsInfo): the running attempt's subtasks.
type VertexDetails struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Parallelism int             `json:"parallelism"`
	Now         int64           `json:"now"`
	Subtasks    []VertexSubtask `json:"subtasks"`
}

func (a *api) vertexDetails(w http.ResponseWriter, r *http.Request, j Job) {
	s := j.Status()
	id, ok := a.vertex(w, r, j)
	if !ok {
		return
	}
	var v jobstatus.VertexInfo
	for _, x := range s.Vertices() {
		if x.ID == id {
			v = x
		}
	}
	d := VertexDetails{ID: strconv.Itoa(v.ID), Name: v.Name, Parallelism: v.Parallelism, Now: a.cfg.Now().UnixMilli(), Subtasks: []VertexSubtask{}}
	for _, t := range s.Tasks() {
		if t.Vertex != v.ID {
			continue
		}
		d.Subtasks = append(d.Subtasks, VertexSubtask{Subtask: t.Subtask, Status: string(jobstatus.StateRunning), Attempt: s.Restarts.Load(), Metrics: SubtaskMetrics{
			ReadRecords: t.RecordsIn, ReadRecordsComplete: true, WriteRecords: t.RecordsOut, WriteRecordsComplete: true,
			BackPressured: t.BackPressured, AlignmentTime: t.AlignmentTime.Milliseconds(), CreditsAvailable: t.CreditsAvailable,
			InputWatermark: t.InputWatermark, OutputWatermark: t.OutputWatermark, LateRecordsDropped: t.LateRecordsDropped,
			AccumulatedBusyTime: t.Time.Busy.Milliseconds(), AccumulatedIdleTime: t.Time.Idle.Milliseconds(),
			AccumulatedBackPressuredTime: t.Time.BackPressured.Milliseconds(),
			BusyTimeMsPerSecond:          t.Time.BusyMsPerSecond, IdleTimeMsPerSecond: t.Time.IdleMsPerSecond,
			BackPressuredTimeMsPerSecond: t.Time.BackPressuredMsPerSecond,
			Weak:                         subtaskWeak(t.Weak),
		}})
	}
	slices.SortFunc(d.Subtasks, func(x, y VertexSubtask) int { return x.Subtask - y.Subtask })
	writeJSON(w, http.StatusOK, d)
}
