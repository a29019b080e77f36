package autoscaler

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Config is the rule's tuning (job.autoscaler.* keys).
type Config struct {
	// TargetUtilization is the busy fraction a vertex is sized for
	// (target.utilization, 0.7).
	TargetUtilization float64
	// Boundary: no change while a vertex's utilization is within
	// TargetUtilization ± Boundary (target.utilization.boundary, 0.3).
	Boundary float64
	// MetricsWindow is how far back observations are averaged
	// (metrics.window).
	MetricsWindow time.Duration
	// Stabilization: observations younger than this after a start or a
	// rescale are ignored (stabilization.interval).
	Stabilization time.Duration
	// CatchUp is the time a source's lag should be consumed in
	// (catch-up.duration).
	CatchUp time.Duration
	// ScaleDownInterval: a vertex scales down at most once per interval
	// (scale-down.interval).
	ScaleDownInterval time.Duration
	// MaxScaleDown is the largest fraction a decision takes off a
	// vertex's parallelism (scale-down.max-factor, 0.6: 10 → 4 at most).
	MaxScaleDown float64
	// MaxScaleUp bounds the factor a decision multiplies a vertex's
	// parallelism by (scale-up.max-factor); 0: unbounded.
	MaxScaleUp float64
	// BackpressureLimit: a vertex backpressured for more than this
	// fraction of its time is not scaled down (backpressure.limit, 0.3).
	BackpressureLimit float64
}

// DefaultConfig is Flink's autoscaler's defaults, except the windows,
// which are shorter for jobs that start and stop within minutes.
func DefaultConfig() Config {
	return Config{
		TargetUtilization: 0.7,
		Boundary:          0.3,
		MetricsWindow:     3 * time.Minute,
		Stabilization:     time.Minute,
		CatchUp:           5 * time.Minute,
		ScaleDownInterval: 10 * time.Minute,
		MaxScaleDown:      0.6,
		BackpressureLimit: 0.3,
	}
}

// Validate reports a configuration the rule cannot work with, naming the
// key and the fix.
func (c Config) Validate() error {
	switch {
	case c.TargetUtilization <= 0 || c.TargetUtilization > 1:
		return fmt.Errorf("job.autoscaler.target.utilization %v: want a fraction in (0, 1]", c.TargetUtilization)
	case c.Boundary < 0 || c.Boundary >= c.TargetUtilization:
		return fmt.Errorf("job.autoscaler.target.utilization.boundary %v: want at least 0 and below the target utilization %v", c.Boundary, c.TargetUtilization)
	case c.MetricsWindow <= 0:
		return fmt.Errorf("job.autoscaler.metrics.window %v: want a positive duration", c.MetricsWindow)
	case c.CatchUp <= 0:
		return fmt.Errorf("job.autoscaler.catch-up.duration %v: want a positive duration", c.CatchUp)
	case c.MaxScaleDown < 0 || c.MaxScaleDown > 1:
		return fmt.Errorf("job.autoscaler.scale-down.max-factor %v: want a fraction in [0, 1]", c.MaxScaleDown)
	case c.MaxScaleUp != 0 && c.MaxScaleUp < 1:
		return fmt.Errorf("job.autoscaler.scale-up.max-factor %v: want at least 1 (or 0: unbounded)", c.MaxScaleUp)
	case c.BackpressureLimit < 0 || c.BackpressureLimit > 1:
		return fmt.Errorf("job.autoscaler.backpressure.limit %v: want a fraction in [0, 1]", c.BackpressureLimit)
	}
	return nil
}

// Vertex is one vertex of the job graph as the rule sees it.
type Vertex struct {
	ID          string
	Parallelism int
	// Min and Max bound the parallelism (Min 0 means 1; Max 0 means
	// unbounded).
	Min, Max int
	// KeyGroups is a keyed vertex's key-group count (its max
	// parallelism); 0 for a vertex without keyed state.
	KeyGroups int
	// Inputs are the upstream vertices; a vertex without any is a source.
	Inputs []string
}

// Sample is one observation of a vertex: rates summed over its subtasks,
// fractions averaged over them.
type Sample struct {
	At         time.Time
	InPerSec   float64 // records in per second (a source: records it read)
	OutPerSec  float64 // records out per second
	Busy       float64 // fraction of time busy, 0..1 (busyTimeMsPerSecond / 1000)
	Backpressd float64 // fraction of time backpressured, 0..1
	Lag        float64 // a source's records behind; negative: unknown
}

// Scaler holds the vertices, their observations and the history the rule
// needs (when it last rescaled, when each vertex last scaled down).
type Scaler struct {
	cfg      Config
	order    []string // topological: every vertex after its inputs
	vertices map[string]*Vertex
	samples  map[string][]Sample
	slots    int // 0: unknown (no bound)
	since    time.Time
	down     map[string]time.Time
}

// New checks cfg and the graph (known inputs, no cycle) and returns a
// Scaler whose observations count from start + stabilization.
func New(cfg Config, vertices []Vertex, start time.Time) (*Scaler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Scaler{cfg: cfg, vertices: map[string]*Vertex{}, samples: map[string][]Sample{}, since: start, down: map[string]time.Time{}}
	for i := range vertices {
		v := vertices[i]
		if v.ID == "" || s.vertices[v.ID] != nil {
			return nil, fmt.Errorf("autoscaler: vertex %q: empty or repeated id", v.ID)
		}
		if v.Parallelism < 1 {
			return nil, fmt.Errorf("autoscaler: vertex %s: parallelism %d", v.ID, v.Parallelism)
		}
		s.vertices[v.ID] = &v
	}
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(id string) error
	visit = func(id string) error {
		switch state[id] {
		case 1:
			return fmt.Errorf("autoscaler: the graph has a cycle through %s", id)
		case 2:
			return nil
		}
		state[id] = 1
		for _, in := range s.vertices[id].Inputs {
			if s.vertices[in] == nil {
				return fmt.Errorf("autoscaler: vertex %s: unknown input %q", id, in)
			}
			if err := visit(in); err != nil {
				return err
			}
		}
		state[id] = 2
		s.order = append(s.order, id)
		return nil
	}
	for _, v := range vertices {
		if err := visit(v.ID); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SetSlots sets the slots the job may use (0: no bound).
func (s *Scaler) SetSlots(n int) { s.slots = n }

// Observe adds a sample of vertex id, in time order; samples older than
// the metrics window are dropped as newer ones arrive.
func (s *Scaler) Observe(id string, x Sample) error {
	if s.vertices[id] == nil {
		return fmt.Errorf("autoscaler: sample of unknown vertex %q", id)
	}
	xs := append(s.samples[id], x)
	i := 0
	for i < len(xs) && xs[i].At.Before(x.At.Add(-s.cfg.MetricsWindow)) {
		i++
	}
	s.samples[id] = xs[i:]
	return nil
}

// Rescaled records that a decision was carried out at t: the vertices run
// at the given parallelism, and observations count again from t plus the
// stabilization time. Vertices that scaled down start their interval.
func (s *Scaler) Rescaled(t time.Time, parallelism map[string]int) error {
	for id, p := range parallelism {
		v := s.vertices[id]
		if v == nil {
			return fmt.Errorf("autoscaler: rescale of unknown vertex %q", id)
		}
		if p < v.Parallelism {
			s.down[id] = t
		}
		v.Parallelism = p
	}
	s.since = t
	clear(s.samples)
	return nil
}

// Decision is the outcome of one evaluation, with its inputs.
type Decision struct {
	At      time.Time
	Rescale bool
	// Reason says why nothing changes when no vertex was evaluated (still
	// stabilizing, too few observations).
	Reason   string
	Vertices []VertexDecision // in topological order
}

// VertexDecision is one vertex's evaluation.
type VertexDecision struct {
	ID       string
	From, To int
	// The averages over the window and what the rule derived from them.
	In, Out, Busy, Backpressure, Lag float64
	TruePerSubtask                   float64 // +Inf: never busy
	Target                           float64 // records in per second to sustain
	Utilization                      float64 // Target over capacity at From
	Why                              string
	// The most backpressured input beyond the limit, and by how much:
	// with the vertex saturated, it marks a bottleneck (decide).
	backpressuredInput string
	inputBackpressure  float64
}

// saturatedBusy is the busy fraction from which a vertex counts as
// saturated: it could not take more.
const saturatedBusy = 0.95

// errNotReady is Evaluate's reason when a vertex lacks observations.
var errNotReady = errors.New("not ready")

// Evaluate applies the rule at now.
func (s *Scaler) Evaluate(now time.Time) Decision {
	d := Decision{At: now}
	from := s.since.Add(s.cfg.Stabilization)
	if now.Before(from) {
		d.Reason = fmt.Sprintf("stabilizing after the start or the last rescale until %s", from.Sub(s.since))
		return d
	}
	avg := map[string]window{}
	for _, id := range s.order {
		w, err := s.window(id, from, now)
		if err != nil {
			d.Reason = fmt.Sprintf("collecting observations of %s: %v", id, err)
			return d
		}
		avg[id] = w
	}
	target := map[string]float64{}
	targetOut := map[string]float64{}
	for _, id := range s.order {
		v, w := s.vertices[id], avg[id]
		vd := VertexDecision{ID: id, From: v.Parallelism, To: v.Parallelism, In: w.in, Out: w.out, Busy: w.busy, Backpressure: w.bp, Lag: w.lag}
		if len(v.Inputs) == 0 {
			// Arrivals are what it read plus what its lag grew by; the
			// lag itself is to be consumed within the catch-up time.
			vd.Target = max(0, w.in+w.lagGrowth)
			if w.lag > 0 {
				vd.Target += w.lag / s.cfg.CatchUp.Seconds()
			}
		} else {
			var want, have float64
			for _, in := range v.Inputs {
				want += targetOut[in]
				have += avg[in].out
				if bp := avg[in].bp; bp > s.cfg.BackpressureLimit && bp > vd.inputBackpressure {
					vd.inputBackpressure, vd.backpressuredInput = bp, in
				}
			}
			vd.Target = w.in
			if have > 0 {
				vd.Target = w.in * want / have
			}
		}
		target[id] = vd.Target
		targetOut[id] = vd.Target
		if w.in > 0 {
			targetOut[id] = vd.Target * w.out / w.in
		}
		s.decide(&vd, v, now)
		d.Rescale = d.Rescale || vd.To != vd.From
		d.Vertices = append(d.Vertices, vd)
	}
	if !d.Rescale {
		d.Reason = "every vertex within its bounds"
	}
	return d
}

// decide sets vd.To and vd.Why for vertex v.
func (s *Scaler) decide(vd *VertexDecision, v *Vertex, now time.Time) {
	p := float64(v.Parallelism)
	if vd.Busy <= 0 {
		vd.TruePerSubtask = math.Inf(1)
		vd.Why = "never busy: its capacity cannot be estimated, left as it is"
		return
	}
	vd.TruePerSubtask = vd.In / p / vd.Busy
	if vd.TruePerSubtask <= 0 {
		vd.Why = "busy without records in: its capacity cannot be estimated, left as it is"
		return
	}
	vd.Utilization = vd.Target / (vd.TruePerSubtask * p)
	lo, hi := s.cfg.TargetUtilization-s.cfg.Boundary, s.cfg.TargetUtilization+s.cfg.Boundary
	// A saturated vertex whose input is backpressured is the bottleneck:
	// it takes in exactly its capacity, so its utilization reads about 1
	// whatever the demand behind the backpressure, which no source
	// reports (a source without a lag gauge reads what it may). Its
	// demand is more than its capacity by an unknown amount: it is sized
	// for its busy time at the target utilization, and measured again
	// there.
	saturated := vd.Busy >= saturatedBusy && vd.backpressuredInput != "" && vd.Utilization <= hi
	if vd.Utilization >= lo && vd.Utilization <= hi && !saturated {
		vd.Why = fmt.Sprintf("utilization %.2f within %.2f–%.2f", vd.Utilization, lo, hi)
		return
	}
	want := int(math.Ceil(vd.Target / (vd.TruePerSubtask * s.cfg.TargetUtilization)))
	if saturated {
		want = max(v.Parallelism+1, int(math.Ceil(p*vd.Busy/s.cfg.TargetUtilization)))
	}
	if want < v.Parallelism {
		switch {
		case vd.Backpressure > s.cfg.BackpressureLimit:
			vd.Why = fmt.Sprintf("backpressured %.2f of its time (limit %.2f): its busy time understates its load, not scaled down", vd.Backpressure, s.cfg.BackpressureLimit)
			return
		case vd.Busy >= s.cfg.TargetUtilization:
			vd.Why = fmt.Sprintf("busy %.2f, at or above the target %.2f: not scaled down", vd.Busy, s.cfg.TargetUtilization)
			return
		}
		if last, ok := s.down[v.ID]; ok && now.Before(last.Add(s.cfg.ScaleDownInterval)) {
			vd.Why = fmt.Sprintf("scaled down %s ago; the next scale-down after %s", now.Sub(last), s.cfg.ScaleDownInterval)
			return
		}
	}
	why := fmt.Sprintf("utilization %.2f outside %.2f–%.2f: %d subtasks of %.0f/s for %.0f/s at %.2f", vd.Utilization, lo, hi, want, vd.TruePerSubtask, vd.Target, s.cfg.TargetUtilization)
	if saturated {
		why = fmt.Sprintf("saturated (busy %.2f) while its input %s is backpressured %.2f of its time: the demand exceeds its capacity by an unknown amount; %d subtasks for its busy time at %.2f", vd.Busy, vd.backpressuredInput, vd.inputBackpressure, want, s.cfg.TargetUtilization)
	}
	if floor := int(math.Ceil(p * (1 - s.cfg.MaxScaleDown))); want < floor {
		why += fmt.Sprintf("; %d limited to %d by the scale-down factor %.2f", want, floor, s.cfg.MaxScaleDown)
		want = floor
	}
	if s.cfg.MaxScaleUp > 0 {
		if ceil := int(math.Floor(p * s.cfg.MaxScaleUp)); want > ceil {
			why += fmt.Sprintf("; %d limited to %d by the scale-up factor %.2f", want, ceil, s.cfg.MaxScaleUp)
			want = ceil
		}
	}
	want, bound := s.bound(v, want)
	if bound != "" {
		why += "; " + bound
	}
	vd.To, vd.Why = want, why
}

// bound clamps want to v's min and max and to the slots, and aligns a
// keyed vertex to its key groups; it says what it changed.
func (s *Scaler) bound(v *Vertex, want int) (int, string) {
	var notes []string
	lo, hi := max(1, v.Min), v.Max
	if v.KeyGroups > 0 && (hi == 0 || v.KeyGroups < hi) {
		hi = v.KeyGroups
	}
	if s.slots > 0 && (hi == 0 || s.slots < hi) {
		hi = s.slots
		if want > hi {
			notes = append(notes, fmt.Sprintf("bounded by the %d slots", s.slots))
		}
	}
	if want < lo {
		want = lo
		notes = append(notes, fmt.Sprintf("at least min %d", lo))
	}
	if hi > 0 && want > hi {
		if len(notes) == 0 {
			notes = append(notes, fmt.Sprintf("at most max %d", hi))
		}
		want = hi
	}
	if v.KeyGroups > 0 && v.KeyGroups%want != 0 {
		// Key groups spread evenly only over a divisor of their count:
		// the next one up, if the bounds allow it.
		for p := want + 1; p <= hi; p++ {
			if v.KeyGroups%p == 0 {
				notes = append(notes, fmt.Sprintf("%d aligned to %d for %d key groups", want, p, v.KeyGroups))
				want = p
				break
			}
		}
	}
	return want, joinNotes(notes)
}

func joinNotes(notes []string) string {
	out := ""
	for i, n := range notes {
		if i > 0 {
			out += "; "
		}
		out += n
	}
	return out
}

// window is a vertex's averages over the observations that count.
type window struct {
	in, out, busy, bp float64
	lag, lagGrowth    float64 // last lag; its growth per second over the window
}

// window averages vertex id's samples at or after from, which must cover
// half the metrics window at least.
func (s *Scaler) window(id string, from, now time.Time) (window, error) {
	xs := s.samples[id]
	i, _ := slices.BinarySearchFunc(xs, from, func(x Sample, t time.Time) int { return x.At.Compare(t) })
	xs = xs[i:]
	if len(xs) < 2 {
		return window{}, fmt.Errorf("%d samples since %s: %w", len(xs), from.Format(time.TimeOnly), errNotReady)
	}
	span := xs[len(xs)-1].At.Sub(xs[0].At)
	if span < s.cfg.MetricsWindow/2 {
		return window{}, fmt.Errorf("they span %s of the %s window, want half: %w", span, s.cfg.MetricsWindow, errNotReady)
	}
	var w window
	for _, x := range xs {
		w.in += x.InPerSec
		w.out += x.OutPerSec
		w.busy += x.Busy
		w.bp += x.Backpressd
	}
	n := float64(len(xs))
	w.in, w.out, w.busy, w.bp = w.in/n, w.out/n, w.busy/n, w.bp/n
	first, last := xs[0], xs[len(xs)-1]
	w.lag = last.Lag
	if first.Lag >= 0 && last.Lag >= 0 {
		w.lagGrowth = (last.Lag - first.Lag) / span.Seconds()
	}
	return w, nil
}
