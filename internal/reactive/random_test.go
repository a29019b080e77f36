package reactive

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestRandomCluster runs the rule against a model of a cluster whose
// TaskManagers join and are lost at random, with rescales that take a
// random time and sometimes fail. It checks every rescale against the
// model:
//
//   - one at a time: no rescale while one is in progress;
//   - within bounds: To is at least the pinned minimum, at most the max
//     parallelism and the slots there are;
//   - up only once the slots have not grown for the stabilization
//     timeout; down only once the slots have been short of the job's need
//     for the wait timeout, without a break;
//   - liveness: once the slots stop changing, the job ends at
//     min(slots, max) (or where it was, with fewer slots than its pinned
//     minimum).
func TestRandomCluster(t *testing.T) {
	seen := coretest.Outcomes{}
	n := coretest.Seeds{First: 1, N: 500, Short: 50}.Run(t, func(seed uint64) {
		runCluster(t, seed, seen)
	})
	seen.Require(t, n, 5, "up", "down", "failed", "lost-and-back", "at-max", "below-min")
}

func runCluster(t *testing.T, seed uint64, seen coretest.Outcomes) {
	rng := rand.New(rand.NewPCG(seed, 11))
	cfg := Config{
		Stabilization: time.Duration(rng.IntN(5000)) * time.Millisecond,
		WaitTimeout:   time.Duration(rng.IntN(10000)) * time.Millisecond,
		MinIncrease:   1 + rng.IntN(2),
		RetryDelay:    time.Second,
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pinned := 1 + rng.IntN(3)
	maxp := pinned + rng.IntN(10)
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	var hist []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (cfg %+v, min %d, max %d): %s\nhistory:\n%s", seed, cfg, pinned, maxp, fmt.Sprintf(format, args...), strings.Join(hist, "\n"))
	}
	// The model.
	p, slots := 1, 0
	var grewAt, shortSince time.Time
	shortBroken := false // slots were short and came back without a rescale
	var pending *Rescale
	var doneAt time.Time
	need := func() int { return max(p, pinned) }
	track := func() {
		if slots >= need() {
			if !shortSince.IsZero() {
				shortBroken = true
			}
			shortSince = time.Time{}
		} else if shortSince.IsZero() {
			shortSince = now
		}
	}
	step := func(ev Event) {
		acts := m.Step(now, ev)
		hist = append(hist, fmt.Sprintf("%6.1fs %T%+v -> %s", now.Sub(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)).Seconds(), ev, ev, format(acts)))
		for _, a := range acts {
			r, ok := a.(Rescale)
			if !ok {
				continue
			}
			switch {
			case pending != nil:
				fail("rescale %+v while %+v is in progress", r, *pending)
			case r.To < pinned || r.To > maxp || r.To > slots:
				fail("rescale to %d outside [%d, min(%d, %d slots)]", r.To, pinned, maxp, slots)
			case r.From != p:
				fail("rescale from %d; the job runs at %d", r.From, p)
			case r.Down && (shortSince.IsZero() || now.Sub(shortSince) < cfg.WaitTimeout):
				fail("down at %v, short since %v, wait %v", now, shortSince, cfg.WaitTimeout)
			case r.Down && r.To >= p:
				fail("down from %d to %d", p, r.To)
			case !r.Down && (r.To < p+cfg.MinIncrease || now.Sub(grewAt) < cfg.Stabilization):
				fail("up from %d to %d at %v, slots grew at %v", p, r.To, now, grewAt)
			}
			if r.Down {
				seen["down"]++
			} else {
				seen["up"]++
			}
			if r.To == maxp && slots > maxp {
				seen["at-max"]++
			}
			pending = &r
			doneAt = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		}
	}
	step(Running{Shape: Shape{Parallelism: p, Min: pinned, Max: maxp}})
	track()
	advance := func(d time.Duration) {
		now = now.Add(d)
		if pending != nil && !now.Before(doneAt) {
			r := *pending
			pending = nil
			if rng.IntN(8) == 0 {
				seen["failed"]++
				step(RescaleFailed{Err: "checkpoint failed"})
			} else {
				p = r.To
				step(Running{Shape: Shape{Parallelism: p, Min: pinned, Max: maxp}})
			}
			track()
		}
	}
	for range 40 + rng.IntN(40) {
		advance(time.Duration(rng.IntN(4000)) * time.Millisecond)
		switch rng.IntN(4) {
		case 0, 1:
			n := slots + 1 + rng.IntN(4)
			if n > slots {
				grewAt = now
			}
			slots = n
			track()
			step(SlotsChanged{Total: slots})
		case 2:
			slots = max(0, slots-1-rng.IntN(4))
			track()
			if slots < pinned {
				seen["below-min"]++
			}
			step(SlotsChanged{Total: slots})
		default:
			step(Tick{})
		}
		if shortBroken {
			seen["lost-and-back"]++
			shortBroken = false
		}
	}
	// The slots stay: the job settles at every slot it can use.
	for range 200 {
		advance(500 * time.Millisecond)
		step(Tick{})
	}
	want := p
	if slots >= pinned {
		want = min(slots, maxp)
		if !(want > p && want < p+cfg.MinIncrease) && p != want {
			fail("settled at %d with %d slots; want %d", p, slots, want)
		}
	}
	if pending != nil {
		fail("a rescale still in progress after the slots settled")
	}
}
