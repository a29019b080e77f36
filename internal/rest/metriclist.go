package rest

import (
	"net/http"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/jobstatus"
)

// MetricValue is one entry of a Flink metric list (GET /jobmanager/metrics,
// /taskmanagers/{tmid}/metrics): without ?get= only the ids, with
// ?get=a,b the values of those that exist.
type MetricValue struct {
	ID    string `json:"id"`
	Value string `json:"value,omitempty"`
}

// metricList answers Flink's metric list of values (name → its value,
// read only when asked for).
func metricList(w http.ResponseWriter, r *http.Request, values map[string]func() string) {
	out := []MetricValue{}
	if get := r.URL.Query().Get("get"); get != "" {
		for _, id := range strings.Split(get, ",") {
			if v, ok := values[id]; ok {
				out = append(out, MetricValue{ID: id, Value: v()})
			}
		}
	} else {
		for id := range values {
			out = append(out, MetricValue{ID: id})
		}
		slices.SortFunc(out, func(x, y MetricValue) int { return strings.Compare(x.ID, y.ID) })
	}
	writeJSON(w, http.StatusOK, out)
}

func itoa(n int64) func() string { return func() string { return strconv.FormatInt(n, 10) } }

// heap reads the Go heap; ReadMemStats stops the world briefly, so only
// when a value is asked for.
func heap(f func(*goruntime.MemStats) uint64) func() string {
	return func() string {
		var ms goruntime.MemStats
		goruntime.ReadMemStats(&ms)
		return strconv.FormatUint(f(&ms), 10)
	}
}

// jobManagerMetrics are Flink's JobManager metrics that weir has, and the
// Go runtime's in place of the JVM's.
func (a *api) jobManagerMetrics(w http.ResponseWriter, r *http.Request) {
	var tms, total, free, running int64
	if a.cfg.TaskManagers != nil {
		for _, tm := range a.cfg.TaskManagers() {
			tms++
			total += int64(tm.SlotsNumber)
			free += int64(tm.FreeSlots)
		}
	}
	for _, j := range a.cfg.Jobs() {
		if j.Status().State() == jobstatus.StateRunning {
			running++
		}
	}
	values := map[string]func() string{
		"numRegisteredTaskManagers":       itoa(tms),
		"taskSlotsTotal":                  itoa(total),
		"taskSlotsAvailable":              itoa(free),
		"numRunningJobs":                  itoa(running),
		"Status.Go.Goroutines":            func() string { return strconv.Itoa(goruntime.NumGoroutine()) },
		"Status.Go.Memory.Heap.Used":      heap(func(m *goruntime.MemStats) uint64 { return m.HeapAlloc }),
		"Status.Go.Memory.Heap.Committed": heap(func(m *goruntime.MemStats) uint64 { return m.HeapSys }),
	}
	metricList(w, r, values)
}

// TaskManagerDetails is the body of GET /taskmanagers/{tmid} (Flink's
// TaskManagerDetailsInfo, the fields weir knows).
type TaskManagerDetails struct {
	TaskManagerInfo
	Metrics TaskManagerMetrics `json:"metrics"`
}

// TaskManagerMetrics are the metrics of GET /taskmanagers/{tmid}.
type TaskManagerMetrics struct {
	SlotsTotal     int `json:"taskSlotsTotal"`
	SlotsAvailable int `json:"taskSlotsAvailable"`
}

// taskManager resolves {tmid}; an unknown one answers 404 naming those
// known.
func (a *api) taskManager(w http.ResponseWriter, r *http.Request) (TaskManagerInfo, bool) {
	id := r.PathValue("tmid")
	var ids []string
	if a.cfg.TaskManagers != nil {
		for _, tm := range a.cfg.TaskManagers() {
			if tm.ID == id {
				return tm, true
			}
			ids = append(ids, tm.ID)
		}
	}
	a.fail(w, r, http.StatusNotFound, "taskmanager "+strconv.Quote(id)+" not found; known taskmanagers: "+quoteAll(ids)+" (GET /taskmanagers lists them)")
	return TaskManagerInfo{}, false
}

func (a *api) taskManagerDetails(w http.ResponseWriter, r *http.Request) {
	tm, ok := a.taskManager(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, TaskManagerDetails{TaskManagerInfo: tm, Metrics: TaskManagerMetrics{SlotsTotal: tm.SlotsNumber, SlotsAvailable: tm.FreeSlots}})
}

func (a *api) taskManagerMetrics(w http.ResponseWriter, r *http.Request) {
	tm, ok := a.taskManager(w, r)
	if !ok {
		return
	}
	metricList(w, r, map[string]func() string{
		"taskSlotsTotal":      itoa(int64(tm.SlotsNumber)),
		"taskSlotsAvailable":  itoa(int64(tm.FreeSlots)),
		"registeredTimestamp": itoa(tm.Registered),
	})
}
