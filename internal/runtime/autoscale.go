package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/autoscaler"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/jobstatus"
)

// AutoscalerConfig is job.autoscaler.*: whether the autoscaler runs, how
// often it samples and evaluates, and its rule's settings.
type AutoscalerConfig struct {
	Enabled  bool
	Interval time.Duration
	Rule     autoscaler.Config
}

// autoscaleDriver is the autoscaler's IO: every interval it samples the
// running attempt's task reports (records in and out, busy and
// backpressured time per subtask), feeds them to the pure rule
// (internal/autoscaler), records each evaluation in the job's status and
// log, and carries out a decision through the in-place rescale. It lives
// as long as the job, across the attempts its rescales start; each
// attempt's graph is attached as it is deployed.
//
// A vertex is known by the uid of its chain's head, stable across
// rescales. Vertices whose operators the program pinned
// (Stream.Parallelism) keep their parallelism; a keyed vertex stays
// within its key groups.
type autoscaleDriver struct {
	cfg     AutoscalerConfig
	status  *jobstatus.JobStatus
	rescale func(context.Context, jobstatus.Rescale) (jobstatus.RescaleResult, error)
	log     *slog.Logger
	now     func() time.Time
	// slots returns the slots the job may use, the bound of any vertex's
	// parallelism under slot sharing; nil: unbounded (a local run).
	slots func() int

	mu     sync.Mutex
	jg     *dataflow.JobGraph // the attached attempt's graph
	ids    []string           // head uid by vertex id
	scaler *autoscaler.Scaler
	last   map[[2]int]taskCounts // previous sample per (vertex, subtask)
	lastAt time.Time
}

// taskCounts is a subtask's counters at a sample.
type taskCounts struct{ in, out int64 }

func newAutoscaleDriver(cfg AutoscalerConfig, status *jobstatus.JobStatus, rescale func(context.Context, jobstatus.Rescale) (jobstatus.RescaleResult, error), log *slog.Logger, now func() time.Time) (*autoscaleDriver, error) {
	if err := cfg.Rule.Validate(); err != nil {
		return nil, err
	}
	if cfg.Interval <= 0 {
		return nil, fmt.Errorf("job.autoscaler.interval %v: want a positive duration", cfg.Interval)
	}
	if status != nil {
		jobstatus.RecorderOf(status).SetAutoscaling()
	}
	return &autoscaleDriver{cfg: cfg, status: status, rescale: rescale, log: log, now: now}, nil
}

// autoscalerVertices describes jg's vertices for the rule.
func autoscalerVertices(jg *dataflow.JobGraph) ([]autoscaler.Vertex, []string) {
	ids := make([]string, len(jg.Vertices))
	for i, v := range jg.Vertices {
		ids[i] = v.Chain[0].UID
	}
	out := make([]autoscaler.Vertex, 0, len(jg.Vertices))
	for i, v := range jg.Vertices {
		av := autoscaler.Vertex{ID: ids[i], Parallelism: v.Parallelism}
		pinned := true
		for _, n := range v.Chain {
			pinned = pinned && n.ExplicitParallelism
		}
		if pinned {
			av.Min, av.Max = v.Parallelism, v.Parallelism
		}
		for _, in := range v.Inputs {
			av.Inputs = append(av.Inputs, ids[in.From.ID])
			if in.Edge.Partition == dataflow.Hash {
				av.KeyGroups = jg.MaxParallelism
			}
		}
		if av.KeyGroups > 0 && (av.Max == 0 || av.Max > av.KeyGroups) {
			av.Max = av.KeyGroups
		}
		out = append(out, av)
	}
	return out, ids
}

// Autoscaler is the autoscaler of a job on a cluster: the JobManager
// makes one per job, Attaches each run of it (the submission, each run an
// in-place rescale starts) and Runs it until the job ends.
type Autoscaler struct{ d *autoscaleDriver }

// NewAutoscaler returns the autoscaler of a cluster job with cfg; slots
// says how many slots the job may use (under slot sharing, the bound of
// any vertex's parallelism).
func NewAutoscaler(cfg AutoscalerConfig, log *slog.Logger, slots func() int) (*Autoscaler, error) {
	d, err := newAutoscaleDriver(cfg, nil, nil, log, time.Now)
	if err != nil {
		return nil, err
	}
	d.slots = slots
	return &Autoscaler{d: d}, nil
}

// Attach makes j's run the one the autoscaler samples and rescales.
func (a *Autoscaler) Attach(j *ClusterJob) error {
	st := j.jm.cfg.Status
	rec := jobstatus.RecorderOf(st)
	rec.SetAutoscaling()
	a.d.mu.Lock()
	if old := a.d.status; old != nil && old != st {
		// A new run's status starts afresh: it inherits the figures and
		// evaluations of the runs before.
		st.AutoscalerRescales.Store(old.AutoscalerRescales.Load())
		_, ds := old.Autoscaler()
		for _, d := range ds {
			rec.AutoscalerDecided(d)
		}
	}
	a.d.status, a.d.rescale = st, j.jm.cfg.Control.Rescale
	a.d.mu.Unlock()
	return a.d.attach(j.jm.jg)
}

// Run samples and evaluates every interval until ctx ends.
func (a *Autoscaler) Run(ctx context.Context) { a.d.run(ctx) }

// attach makes jg the graph of the running attempt: the first builds the
// rule, later ones (after a rescale) tell it the new parallelisms.
func (d *autoscaleDriver) attach(jg *dataflow.JobGraph) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	vs, ids := autoscalerVertices(jg)
	now := d.now()
	d.last, d.lastAt = nil, time.Time{}
	if d.scaler != nil && slices.Equal(ids, d.ids) {
		par := map[string]int{}
		for _, v := range vs {
			par[v.ID] = v.Parallelism
		}
		d.jg = jg
		return d.scaler.Rescaled(now, par)
	}
	s, err := autoscaler.New(d.cfg.Rule, vs, now)
	if err != nil {
		return err
	}
	d.jg, d.ids, d.scaler = jg, ids, s
	return nil
}

// run samples and evaluates every interval until ctx ends.
func (d *autoscaleDriver) run(ctx context.Context) {
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r, dec, ok := d.tick()
		if !ok {
			continue
		}
		d.mu.Lock()
		status, rescale := d.status, d.rescale
		d.mu.Unlock()
		if r != nil {
			res, err := rescale(ctx, *r)
			if err != nil {
				dec.Error = err.Error()
				d.log.Warn("autoscaler: rescale refused or failed; the job goes on at its parallelism", "error", err)
			} else {
				status.AutoscalerRescales.Add(1)
				d.log.Info("autoscaler: rescaled", "checkpoint", res.Checkpoint, "parallelism", res.Parallelism)
			}
		}
		jobstatus.RecorderOf(status).AutoscalerDecided(dec)
	}
}

// tick takes a sample and evaluates the rule; it returns the rescale to
// ask for (nil: none) and the evaluation to record, or ok false when
// nothing ran to sample.
func (d *autoscaleDriver) tick() (*jobstatus.Rescale, jobstatus.AutoscalerDecision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.scaler == nil || d.status.State() != jobstatus.StateRunning {
		d.log.Debug("autoscaler: the job does not run; nothing sampled")
		return nil, jobstatus.AutoscalerDecision{}, false
	}
	now := d.now()
	if d.slots != nil {
		d.scaler.SetSlots(d.slots())
	}
	if !d.sample(now) {
		d.log.Debug("autoscaler: no new task reports to sample")
		return nil, jobstatus.AutoscalerDecision{}, false
	}
	dec := d.scaler.Evaluate(now)
	out := jobstatus.AutoscalerDecision{At: now, Rescale: dec.Rescale, Reason: dec.Reason}
	var r *jobstatus.Rescale
	for _, v := range dec.Vertices {
		tr := v.TruePerSubtask
		if math.IsInf(tr, 0) || math.IsNaN(tr) {
			tr = -1
		}
		out.Vertices = append(out.Vertices, jobstatus.AutoscalerVertex{
			ID: v.ID, From: v.From, To: v.To, In: v.In, Out: v.Out, Busy: v.Busy, Backpressure: v.Backpressure, Lag: v.Lag,
			TruePerSubtask: tr, Target: v.Target, Utilization: v.Utilization, Why: v.Why,
		})
		if v.To != v.From {
			if r == nil {
				r = &jobstatus.Rescale{Vertices: map[string]int{}}
			}
			r.Vertices[v.ID] = v.To
			d.log.Info("autoscaler: vertex to rescale", "vertex", v.ID, "from", v.From, "to", v.To, "why", v.Why)
		}
	}
	if r == nil {
		d.log.Debug("autoscaler: no rescale", "reason", dec.Reason)
	}
	return r, out, true
}

// sample observes every vertex's rates since the previous sample; false
// when the reports are incomplete or this is the first sample.
func (d *autoscaleDriver) sample(now time.Time) bool {
	tasks := d.status.Tasks()
	want := 0
	for _, v := range d.jg.Vertices {
		want += v.Parallelism
	}
	if len(tasks) != want {
		return false
	}
	// On a cluster the reports are as fresh as the TaskManagers' last
	// heartbeats: a sample that finds every counter as it was sees no new
	// report (or an idle job, which gives the rule nothing to estimate
	// either) and waits for the next, so rates span whole report
	// intervals.
	if d.last != nil {
		same := true
		for _, t := range tasks {
			if p, ok := d.last[[2]int{t.Vertex, t.Subtask}]; !ok || p != (taskCounts{in: t.RecordsIn, out: t.RecordsOut}) {
				same = false
				break
			}
		}
		if same {
			return false
		}
	}
	prev, prevAt := d.last, d.lastAt
	d.last, d.lastAt = make(map[[2]int]taskCounts, len(tasks)), now
	type agg struct {
		in, out      int64
		busy, bp     float64
		n, timed     int
		incompletely bool
		// lag sums the sources' pending records over the lagged
		// subtasks that published them.
		lag    float64
		lagged int
	}
	per := make([]agg, len(d.jg.Vertices))
	for _, t := range tasks {
		if t.Vertex < 0 || t.Vertex >= len(per) {
			return false
		}
		k := [2]int{t.Vertex, t.Subtask}
		c := taskCounts{in: t.RecordsIn, out: t.RecordsOut}
		d.last[k] = c
		a := &per[t.Vertex]
		a.n++
		if p, ok := prev[k]; ok && c.in >= p.in && c.out >= p.out {
			a.in += c.in - p.in
			a.out += c.out - p.out
		} else {
			a.incompletely = true // a new attempt: its counters restarted
		}
		if l, ok := jobstatus.Sum(t.Gauges, jobstatus.PendingRecordsGauge); ok {
			a.lag += max(l, 0)
			a.lagged++
		}
		if tt := t.Time; tt.BusyMsPerSecond+tt.IdleMsPerSecond+tt.BackPressuredMsPerSecond > 0 {
			a.busy += float64(tt.BusyMsPerSecond) / 1000
			a.bp += float64(tt.BackPressuredMsPerSecond) / 1000
			a.timed++
		}
	}
	dt := now.Sub(prevAt).Seconds()
	if prev == nil || dt <= 0 {
		return false
	}
	for i, a := range per {
		if a.incompletely || a.timed < a.n {
			continue // observed again at the next sample
		}
		x := autoscaler.Sample{At: now, InPerSec: float64(a.in) / dt, OutPerSec: float64(a.out) / dt,
			Busy: a.busy / float64(a.timed), Backpressd: a.bp / float64(a.timed), Lag: -1}
		if len(d.jg.Vertices[i].Inputs) == 0 {
			x.InPerSec = x.OutPerSec // a source's input is what it read
			if a.lagged == a.n {
				// Known only when every subtask publishes its pending
				// records: a partial sum would understate the backlog.
				x.Lag = a.lag
			}
		}
		if err := d.scaler.Observe(d.ids[i], x); err != nil {
			d.log.Error("autoscaler: observe", "error", err)
		}
	}
	return true
}
