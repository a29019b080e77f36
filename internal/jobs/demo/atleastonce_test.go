package demo_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestAtLeastOnceUnderFaults runs the demo in AT_LEAST_ONCE mode (barriers
// are not aligned) with failures at every fault point. A record that
// overtook a barrier is in the checkpoint's state and is replayed after a
// restore, so it is counted twice: output lines may repeat and counts and
// totals may run high, but nothing may be lost. So for every event i there
// must be a committed line "i,account,count,total" with i's account, and
// every committed line's count and total must be at least the failure-free
// ones (state only over-counts). Duplicated and inflated lines are logged.
func TestAtLeastOnceUnderFaults(t *testing.T) {
	const n, k = 100_000, 53
	want := demo.Expected(n, k)
	for p := 1; p <= 3; p++ {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			r := newRun(t, n, k, p)
			r.extra = map[string]string{config.CheckpointingMode: config.ModeAtLeastOnce}
			r.plan = faultPlan(4, int64(100+p), n, faults.AllPoints()...)
			res := r.execute(t, context.Background(), nil)
			if res.err != nil {
				t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
			}
			if got := res.inj.Fired(); got != 4 {
				t.Errorf("%d of 4 failures fired", got)
			}
			if res.readErr != nil {
				t.Fatal(res.readErr)
			}
			seen := make([]int, n)
			inflated := 0
			for _, l := range res.lines {
				got, err := parseResult(l)
				if err != nil || got.I < 0 || got.I >= n {
					t.Fatalf("committed line %q is not an output line of event in [0, %d): %v", l, n, err)
				}
				exp, err := parseResult(want[got.I])
				if err != nil {
					t.Fatal(err)
				}
				if got.Account != exp.Account || got.Count < exp.Count || got.Total < exp.Total {
					t.Fatalf("committed line %q undercounts or has the wrong account; failure-free: %q", l, want[got.I])
				}
				if got != exp {
					inflated++
				}
				seen[got.I]++
			}
			repeated := 0 // events with more than one line
			for i, c := range seen {
				repeated += max(c-1, 0)
				if c == 0 {
					t.Fatalf("no line for event %d (failure-free: %q): at-least-once lost a record", i, want[i])
				}
			}
			t.Logf("%d lines committed for %d events: %d duplicates (%d of them identical lines), %d lines over-counted by replayed records, %d restarts",
				len(res.lines), n, repeated, duplicates(res.lines), inflated, res.restarts)
		})
	}
}

// parseResult parses "i,account,count,total".
func parseResult(l string) (demo.Result, error) {
	var v [4]int64
	f := strings.Split(l, ",")
	if len(f) != 4 {
		return demo.Result{}, fmt.Errorf("line %q: want 4 fields", l)
	}
	for j := range v {
		x, err := strconv.ParseInt(f[j], 10, 64)
		if err != nil {
			return demo.Result{}, fmt.Errorf("line %q: %w", l, err)
		}
		v[j] = x
	}
	return demo.Result{I: v[0], Account: v[1], Count: v[2], Total: v[3]}, nil
}
