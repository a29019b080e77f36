package windows_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/windows"
)

// failuresPerRun is how many failures each run of the failure tests
// injects, one per attempt.
const failuresPerRun = 3

// TestWindowsExactlyOnceUnderFaults injects failures at each fault point
// for each assigner (tumbling, sliding, session), and requires the
// committed output to be exactly the failure-free closed form: window
// state and event-time timers restored from the checkpoint, the source
// replaying after it, no firing lost or repeated in the committed files.
//
// By default every point runs with every assigner on the heap backend, at
// a parallelism chosen so that every (point, parallelism) and every
// (assigner, parallelism) pair occurs too (a Latin square), and on the lsm
// backend every point once (the assigner cycling). -long runs the full
// matrix: every point, assigner and parallelism on both backends.
func TestWindowsExactlyOnceUnderFaults(t *testing.T) {
	assigners := []string{"tumble:50", "slide:60,20", "session:4"}
	const n = 3000
	fromCheckpoint, restarts := 0, 0
	defer func() {
		if !t.Failed() && 3*fromCheckpoint < restarts {
			t.Errorf("only %d of %d restarts restored a checkpoint; the failures land too early to test restore", fromCheckpoint, restarts)
		}
	}()
	for _, backend := range []string{"heap", "lsm"} {
		for pi, point := range faults.AllPoints() {
			for ai, w := range assigners {
				for p := 1; p <= 3; p++ {
					covering := (pi+ai)%3+1 == p
					if !*long {
						if !covering {
							continue
						}
						// lsm: one assigner per point.
						if backend == "lsm" && ai != pi%len(assigners) {
							continue
						}
					}
					t.Run(fmt.Sprintf("%s/%s/%s/p%d", backend, point, w, p), func(t *testing.T) {
						o := smallOptions(t, w, n)
						o.Rate = rateFor(backend)
						r := newFRun(t, o, p, backend)
						r.plan = faultPlan(failuresPerRun, int64(101*pi+13*ai+p), n, point)
						res := r.execute(t, context.Background(), nil)
						checkFailures(t, res, failuresPerRun)
						if err := windows.Verify(r.o, res.lines, res.late); err != nil {
							t.Fatalf("committed output differs from the failure-free closed form: %v\nfired: %v", err, res.inj.Log())
						}
						fromCheckpoint += res.restored
						restarts += int(res.stats.Restarts)
						t.Logf("exact: %s; fired %v", res.summary(), res.inj.Log())
					})
				}
			}
		}
	}
}

// TestWindowsLateEventsConservedUnderFaults runs tumbling windows with a
// watermark bound below the disorder (O < M), so events arrive late, with
// failures at all points: every event must be counted in its window's
// last firing or listed as late, exactly once (windows.Verify's
// conservation check), whichever attempt judged it late. With allowed
// lateness, late firings repeat windows with growing counts.
func TestWindowsLateEventsConservedUnderFaults(t *testing.T) {
	cases := []struct {
		backend  string
		p        int
		lateness int64
	}{
		{"heap", 1, 0}, {"heap", 2, 10}, {"heap", 3, 0}, {"lsm", 2, 0},
	}
	if *long {
		cases = append(cases, struct {
			backend  string
			p        int
			lateness int64
		}{"lsm", 3, 10}, struct {
			backend  string
			p        int
			lateness int64
		}{"heap", 3, 10})
	}
	const n = 3000
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s/p%d/L%d", c.backend, c.p, c.lateness), func(t *testing.T) {
			o := windows.Options{Events: n, Keys: 23, Window: spec(t, "tumble:50"), MaxDisorder: 200, OutOfOrderness: 20, Lateness: c.lateness, Rate: rateFor(c.backend)}
			r := newFRun(t, o, c.p, c.backend)
			// Frequent watermarks: with the default 200 ms few are
			// emitted in a run this short, and each makes the events
			// behind it by more than O late.
			r.extra = map[string]string{config.AutoWatermarkInterval: "2ms"}
			r.plan = faultPlan(failuresPerRun, int64(7*i+c.p), n, faults.AllPoints()...)
			res := r.execute(t, context.Background(), nil)
			checkFailures(t, res, failuresPerRun)
			if len(res.late) == 0 {
				t.Fatalf("no event was late with --out-of-orderness %d < --max-disorder %d: the test checks nothing", o.OutOfOrderness, o.MaxDisorder)
			}
			if err := windows.Verify(r.o, res.lines, res.late); err != nil {
				t.Fatalf("conservation broken under failures: %v\nfired: %v", err, res.inj.Log())
			}
			t.Logf("conserved: %s; fired %v", res.summary(), res.inj.Log())
		})
	}
}
