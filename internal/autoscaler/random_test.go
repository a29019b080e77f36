package autoscaler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestRandomLoadSteps runs the rule against a model of a pipeline src →
// mid → keyed whose subtasks each process a fixed number of records per
// second (drawn from the seed), under an arrival rate that steps up or
// down by up to 4× every 10–30 minutes. Every 10 s the model reports what
// the metrics would say; every minute the rule decides, and a rescale
// costs a 20 s pause during which records only arrive. It checks:
//
//   - no vertex is scaled down while busy at or above the target or
//     backpressured above the limit, and every parallelism stays within
//     1 and the slots (and the key groups);
//   - no flapping: within one load phase a vertex changes direction at
//     most once (up to catch up the backlog, then down once caught up);
//   - liveness: by the end of a phase whose need fits in the slots the
//     job keeps up (its lag no longer grows).
func TestRandomLoadSteps(t *testing.T) {
	seen := coretest.Outcomes{}
	n := coretest.Seeds{First: 1, N: 200, Short: 30}.Run(t, func(seed uint64) {
		runLoadSteps(t, seed, seen)
	})
	seen.Require(t, n, 5, "scale-up", "scale-down", "kept-by-backpressure-or-busy")
}

func runLoadSteps(t *testing.T, seed uint64, seen coretest.Outcomes) {
	rng := rand.New(rand.NewPCG(seed, 7))
	cfg := DefaultConfig()
	cfg.MetricsWindow, cfg.Stabilization, cfg.CatchUp, cfg.ScaleDownInterval = time.Minute, 30*time.Second, 5*time.Minute, 5*time.Minute
	ids := []string{"src", "mid", "keyed"}
	capacity := map[string]float64{}
	for _, id := range ids {
		capacity[id] = 500 + rng.Float64()*4500
	}
	slots := 16 + rng.IntN(48)
	vs := []Vertex{{ID: "src", Parallelism: 1}, {ID: "mid", Parallelism: 1, Inputs: []string{"src"}}, {ID: "keyed", Parallelism: 1, KeyGroups: 128, Inputs: []string{"mid"}}}
	start := t0
	s, err := New(cfg, vs, start)
	if err != nil {
		t.Fatal(err)
	}
	s.SetSlots(slots)
	par := map[string]int{"src": 1, "mid": 1, "keyed": 1}
	rate := 200 + rng.Float64()*2000
	lag := 0.0
	now := start
	pausedUntil := time.Time{}
	const tick = 10 * time.Second
	for phase := 0; phase < 6; phase++ {
		if phase > 0 {
			rate *= []float64{0.25, 0.5, 2, 4}[rng.IntN(4)]
		}
		phaseEnd := now.Add(time.Duration(10+rng.IntN(21)) * time.Minute)
		dirs := map[string][]int{} // the signs of each vertex's changes this phase
		var lagAtMinuteBefore []float64
		for now.Before(phaseEnd) {
			now = now.Add(tick)
			// What the pipeline processes this tick: arrivals plus the
			// backlog, up to the smallest capacity; nothing while paused.
			limit := math.Inf(1)
			bottleneck := ""
			for _, id := range ids {
				if c := capacity[id] * float64(par[id]); c < limit {
					limit, bottleneck = c, id
				}
			}
			x := 0.0
			if !now.Before(pausedUntil) {
				x = min(rate+lag/tick.Seconds(), limit)
			}
			lag = max(0, lag+(rate-x)*tick.Seconds())
			if now.Before(pausedUntil) {
				continue // no metrics from a restarting job
			}
			upstream := true
			for _, id := range ids {
				busy := x / (capacity[id] * float64(par[id]))
				bp := 0.0
				if upstream && id != bottleneck && x >= limit*0.999 {
					bp = 1 - busy // waiting for the bottleneck downstream
				}
				if id == bottleneck {
					upstream = false
				}
				smp := Sample{At: now, InPerSec: x, OutPerSec: x, Busy: busy, Backpressd: bp, Lag: -1}
				if id == "src" {
					smp.Lag = lag
				}
				if err := s.Observe(id, smp); err != nil {
					t.Fatal(err)
				}
			}
			if now.Sub(start)%time.Minute != 0 {
				continue
			}
			lagAtMinuteBefore = append(lagAtMinuteBefore, lag)
			d := s.Evaluate(now)
			changed := map[string]int{}
			for _, v := range d.Vertices {
				if v.To < v.From {
					if v.Busy >= cfg.TargetUtilization || v.Backpressure > cfg.BackpressureLimit {
						t.Fatalf("seed %d at %s: %s scaled down %d -> %d while busy %.2f, backpressured %.2f", seed, now.Sub(start), v.ID, v.From, v.To, v.Busy, v.Backpressure)
					}
					seen["scale-down"]++
				}
				if v.To > v.From {
					seen["scale-up"]++
				}
				if v.To == v.From && v.Why != "" && (v.Utilization < cfg.TargetUtilization-cfg.Boundary) && (v.Busy >= cfg.TargetUtilization || v.Backpressure > cfg.BackpressureLimit) {
					seen["kept-by-backpressure-or-busy"]++
				}
				if v.To < 1 || v.To > slots || (v.ID == "keyed" && v.To > 128) {
					t.Fatalf("seed %d: %s at parallelism %d (slots %d)", seed, v.ID, v.To, slots)
				}
				if v.To != v.From {
					changed[v.ID] = v.To
					sign := 1
					if v.To < v.From {
						sign = -1
					}
					ds := dirs[v.ID]
					if len(ds) == 0 || ds[len(ds)-1] != sign {
						dirs[v.ID] = append(ds, sign)
					}
					if len(dirs[v.ID]) > 2 {
						t.Fatalf("seed %d phase %d: %s flaps: directions %v this phase (now %d -> %d at %s)\n%s", seed, phase, v.ID, dirs[v.ID], v.From, v.To, now.Sub(start), describe(d))
					}
				}
			}
			if d.Rescale {
				for id, p := range changed {
					par[id] = p
				}
				if err := s.Rescaled(now, changed); err != nil {
					t.Fatal(err)
				}
				pausedUntil = now.Add(20 * time.Second)
			}
		}
		// Liveness: if the slots allow keeping up with this phase's rate
		// at the target utilization, the lag stopped growing by the end.
		need := 0
		for _, id := range ids {
			need = max(need, int(math.Ceil(rate/(capacity[id]*cfg.TargetUtilization))))
		}
		if need <= slots && need <= 128 && len(lagAtMinuteBefore) > 3 {
			last := lagAtMinuteBefore[len(lagAtMinuteBefore)-1]
			prev := lagAtMinuteBefore[len(lagAtMinuteBefore)-3]
			if last > prev+rate*1 && last > rate*60 {
				t.Fatalf("seed %d phase %d: rate %.0f/s, the lag still grows at the phase's end (%.0f then %.0f); parallelism %v, capacities %v", seed, phase, rate, prev, last, par, capacity)
			}
		}
	}
}

func describe(d Decision) string {
	out := ""
	for _, v := range d.Vertices {
		out += fmt.Sprintf("  %s %d->%d busy %.2f bp %.2f target %.0f util %.2f: %s\n", v.ID, v.From, v.To, v.Busy, v.Backpressure, v.Target, v.Utilization, v.Why)
	}
	return out
}
