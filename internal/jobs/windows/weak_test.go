package windows_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/windows"
)

// TestWindowsWeakConsistentUnderFaults runs the windowed job in
// WEAKLY_CONSISTENT mode with failures at every fault point, for each
// assigner: a restarted window operator restores its windows and timers
// from its own snapshot, is replayed its input from the producers' logs
// in the order its determinants logged, and fires what it owes; with logs
// large enough nothing is lost or duplicated, so the committed output
// must be the failure-free closed form exactly and the accounting must
// say so. Windows are where a lost record costs most: losing the one that
// triggers a window loses everything the window would have emitted.
func TestWindowsWeakConsistentUnderFaults(t *testing.T) {
	assigners := []string{"tumble:50", "slide:60,20", "session:4"}
	const n = 3000
	for ai, w := range assigners {
		for pi, point := range faults.AllPoints() {
			p := (pi+ai)%3 + 1
			t.Run(fmt.Sprintf("%s/%s/p%d", w, point, p), func(t *testing.T) {
				o := smallOptions(t, w, n)
				o.Rate = rateFor("heap")
				r := newFRun(t, o, p, "heap")
				r.extra = map[string]string{config.CheckpointingMode: config.ModeWeak}
				r.plan = faultPlan(failuresPerRun, int64(701*pi+17*ai+p), n, point)
				res := r.execute(t, context.Background(), nil)
				checkFailures(t, res, failuresPerRun)
				wk := &hooks.Plan(res.env).Status.Weak
				summary := fmt.Sprintf("weak failover: %d failures, %d task restarts, %d replayed, %d lost, %d duplicated",
					wk.Failures.Load(), wk.TaskRestarts.Load(), wk.Replayed.Load(), wk.Lost.Load(), wk.Duplicated.Load())
				if wk.Lost.Load() != 0 || wk.Duplicated.Load() != 0 {
					t.Fatalf("%s: the logs are large enough, nothing may be lost or duplicated", summary)
				}
				if err := windows.Verify(r.o, res.lines, res.late); err != nil {
					t.Fatalf("committed output differs from the failure-free closed form: %v\n%s\nfired: %v", err, summary, res.inj.Log())
				}
				t.Logf("exact; %s; fired %v", summary, res.inj.Log())
			})
		}
	}
}

// TestWindowsWeakSmallLogWithinAccounting forces the in-flight logs below
// what a restarted task needs: records are lost, and the committed output
// must differ from the failure-free closed form by exactly what the
// accounting reports. Tumbling windows without late events fire each
// window once, so a record lost on its way into the windows makes its
// window's count one short, and a line lost on its way into the file sink
// makes one window missing: the losses are the missing windows plus the
// counts the present ones fall short by.
func TestWindowsWeakSmallLogWithinAccounting(t *testing.T) {
	const n = 20000
	var lostInAll int64
	defer func() {
		if !t.Failed() && lostInAll == 0 {
			t.Errorf("no run lost a record: the test exercised no loss")
		}
	}()
	for p := 1; p <= 3; p++ {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			o := smallOptions(t, "tumble:50", n)
			o.Rate = rateFor("heap")
			r := newFRun(t, o, p, "heap")
			// Snapshots far apart and a log of 100 records: a restarted
			// sink or window task needs more than its producers kept.
			r.interval = "400ms"
			r.extra = map[string]string{config.CheckpointingMode: config.ModeWeak, config.WeakInFlightLogMaxRecords: "100"}
			r.plan = faultPlan(failuresPerRun, int64(900+p), n, faults.AfterPreCommit, faults.Commit)
			res := r.execute(t, context.Background(), nil)
			checkFailures(t, res, failuresPerRun)
			if len(res.late) != 0 {
				t.Fatalf("%d late events: windows may fire more than once", len(res.late))
			}
			wk := &hooks.Plan(res.env).Status.Weak
			want := windowCounts(t, windows.Expected(r.o))
			got := windowCounts(t, res.lines)
			var missing, short int64
			for k, c := range want {
				g, ok := got[k]
				switch {
				case !ok:
					missing++
				case g > c:
					t.Fatalf("window %s counted %d events, the failure-free run %d: nothing may be duplicated", k, g, c)
				default:
					short += c - g
				}
			}
			lostInAll += wk.Lost.Load()
			t.Logf("%d windows missing, %d events short in the others; weak failover: %d failures, %d task restarts, %d replayed, %d lost, %d duplicated",
				missing, short, wk.Failures.Load(), wk.TaskRestarts.Load(), wk.Replayed.Load(), wk.Lost.Load(), wk.Duplicated.Load())
			if missing+short != wk.Lost.Load() || wk.Duplicated.Load() != 0 {
				t.Fatalf("the output falls short by %d windows and %d events; the accounting says %d lost, %d duplicated", missing, short, wk.Lost.Load(), wk.Duplicated.Load())
			}
		})
	}
}

// windowCounts maps each committed line's window (account,start,end) to
// its count, failing on a window that fired twice.
func windowCounts(t *testing.T, lines []string) map[string]int64 {
	t.Helper()
	m := make(map[string]int64, len(lines))
	for _, l := range lines {
		f := strings.Split(l, ",")
		if len(f) != 5 {
			t.Fatalf("line %q is not account,start,end,count,sum", l)
		}
		c, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		k := strings.Join(f[:3], ",")
		if _, ok := m[k]; ok {
			t.Fatalf("window %s fired twice", k)
		}
		m[k] = c
	}
	return m
}

// TestWindowsWeakResumeAfterCancel cancels the windowed job in
// WEAKLY_CONSISTENT mode once its tasks snapshotted a few times and runs
// it again on the same state folder: every task restores its own newest
// snapshot (its windows and timers, its channels' watermarks), its
// producers' logs are rebuilt from what their snapshots stored, and each
// consumer is replayed from its own position, so nothing may be lost. A
// restored window task lost its determinants with the process, so its
// output logs count what they skip as possibly duplicated (it reads its
// replayed input in another order, yet fires the same windows by the same
// watermarks): when nothing is counted, the output must be exactly the
// failure-free closed form (as it is in every run seen so far).
func TestWindowsWeakResumeAfterCancel(t *testing.T) {
	const n = 6000
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			o := smallOptions(t, "tumble:50", n)
			o.Rate = rateFor("heap")
			r := newFRun(t, o, p, "heap")
			r.extra = map[string]string{config.CheckpointingMode: config.ModeWeak}
			ctx, cancel := context.WithCancel(context.Background())
			first := r.execute(t, ctx, func(job *weir.Job) {
				deadline := time.Now().Add(time.Minute)
				for s := job.Stats(); s.CompletedCheckpoints < int64(8*p) && s.State != weir.JobFinished; s = job.Stats() {
					if time.Now().After(deadline) {
						break
					}
					time.Sleep(time.Millisecond)
				}
				cancel()
			})
			cancel()
			if first.err == nil {
				t.Skip("the first run finished before its cancel: nothing to restore")
			}
			res := r.execute(t, context.Background(), nil)
			if res.err != nil {
				t.Fatalf("run after the cancel: %v\nlog:\n%.4000s", res.err, res.log)
			}
			if !strings.Contains(res.log.String(), "restoring each task from its own newest snapshot") {
				t.Fatalf("the run after the cancel restored no task snapshot:\n%.4000s", res.log)
			}
			wk := &hooks.Plan(res.env).Status.Weak
			summary := fmt.Sprintf("weak failover: %d failures, %d task restarts, %d replayed, %d lost, %d duplicated",
				wk.Failures.Load(), wk.TaskRestarts.Load(), wk.Replayed.Load(), wk.Lost.Load(), wk.Duplicated.Load())
			if wk.Lost.Load() != 0 {
				t.Fatalf("%s: the stored logs cover every gap, nothing may be lost", summary)
			}
			err := windows.Verify(r.o, res.lines, res.late)
			if err != nil && wk.Duplicated.Load() == 0 {
				t.Fatalf("committed output differs from the failure-free closed form, nothing counted: %v\n%s", err, summary)
			}
			t.Logf("%s; closed form: %v", summary, err)
		})
	}
}
