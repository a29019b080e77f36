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
	jobstatus.RecorderOf(status).SetAutoscaling()
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
		if r != nil {
			res, err := d.rescale(ctx, *r)
			if err != nil {
				dec.Error = err.Error()
				d.log.Warn("autoscaler: rescale refused or failed; the job goes on at its parallelism", "error", err)
			} else {
				d.status.AutoscalerRescales.Add(1)
				d.log.Info("autoscaler: rescaled", "checkpoint", res.Checkpoint, "parallelism", res.Parallelism)
			}
		}
		jobstatus.RecorderOf(d.status).AutoscalerDecided(dec)
	}
}

// tick takes a sample and evaluates the rule; it returns the rescale to
// ask for (nil: none) and the evaluation to record, or ok false when
// nothing ran to sample.
func (d *autoscaleDriver) tick() (*jobstatus.Rescale, jobstatus.AutoscalerDecision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.scaler == nil || d.status.State() != jobstatus.StateRunning {
		return nil, jobstatus.AutoscalerDecision{}, false
	}
	now := d.now()
	if !d.sample(now) {
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
	prev, prevAt := d.last, d.lastAt
	d.last, d.lastAt = make(map[[2]int]taskCounts, len(tasks)), now
	type agg struct {
		in, out      int64
		busy, bp     float64
		n, timed     int
		incompletely bool
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
		}
		if err := d.scaler.Observe(d.ids[i], x); err != nil {
			d.log.Error("autoscaler: observe", "error", err)
		}
	}
	return true
}
