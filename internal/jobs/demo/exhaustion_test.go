package demo_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestRestartStrategyExhausted injects more failures than the restart
// strategy allows: Execute must return a *weir.JobFailedError naming the
// injected root cause, and what was committed until then must be a
// consistent prefix of the failure-free output: for every account, the
// lines with counts 1..m for some m, nothing else and nothing twice.
func TestRestartStrategyExhausted(t *testing.T) {
	const n, k = 100_000, 61
	cases := []struct {
		name         string
		restart      map[string]string
		failures     int
		wantRestarts int
	}{
		{"none", map[string]string{config.RestartStrategyType: config.RestartNone}, 2, 0},
		{"fixed-delay-2", map[string]string{
			config.RestartStrategyType: config.RestartFixed,
			config.FixedDelayAttempts:  "2",
			config.FixedDelayDelay:     "0ms",
		}, 4, 2},
	}
	for _, c := range cases {
		for p := 1; p <= 2; p++ {
			t.Run(fmt.Sprintf("%s/p%d", c.name, p), func(t *testing.T) {
				r := newRun(t, n, k, p)
				r.restart = c.restart
				// Process failures fire as soon as they are armed, so the
				// job fails for good well before the end of the input.
				r.plan = faultPlan(c.failures, 5, n, faults.Process)
				res := r.execute(t, context.Background(), nil)
				var jf *weir.JobFailedError
				if !errors.As(res.err, &jf) {
					t.Fatalf("Execute returned %v (%T), want a *weir.JobFailedError", res.err, res.err)
				}
				if !errors.Is(res.err, faults.ErrInjected) {
					t.Errorf("error %v does not wrap the injected failure", res.err)
				}
				last := res.inj.Log()[len(res.inj.Log())-1]
				cause := (&faults.InjectedError{Point: last.Point, N: last.N}).Error()
				if !strings.Contains(res.err.Error(), cause) {
					t.Errorf("error %q does not name the root cause %q", res.err, cause)
				}
				if jf.Restarts != c.wantRestarts {
					t.Errorf("JobFailedError.Restarts = %d, want %d", jf.Restarts, c.wantRestarts)
				}
				if got := res.inj.Fired(); got != c.wantRestarts+1 {
					t.Errorf("%d failures fired, want %d: the job went on after its strategy gave up", got, c.wantRestarts+1)
				}
				if res.readErr != nil {
					t.Fatal(res.readErr)
				}
				if msg := checkPrefix(demo.Expected(n, k), res.lines); msg != "" {
					t.Fatal(msg)
				}
				t.Logf("error: %v; %d lines committed before the job failed", res.err, len(res.lines))
			})
		}
	}
}

// checkPrefix reports how got fails to be a per-account prefix of want
// (the demo's lines "i,account,count,total"), "" if it is one.
func checkPrefix(want, got []string) string {
	pos := make(map[string]int, len(want))
	for i, l := range want {
		pos[l] = i
	}
	seen := make(map[string]bool, len(got))
	perAccount := map[string]int{} // account -> lines committed
	maxCount := map[string]int{}
	for _, l := range got {
		if _, ok := pos[l]; !ok {
			return "committed line " + l + " is not in the failure-free output"
		}
		if seen[l] {
			return "committed line " + l + " twice"
		}
		seen[l] = true
		f := strings.Split(l, ",")
		perAccount[f[1]]++
		count, err := strconv.Atoi(f[2])
		if err != nil {
			return "committed line " + l + ": " + err.Error()
		}
		maxCount[f[1]] = max(maxCount[f[1]], count)
	}
	for a, c := range perAccount {
		if maxCount[a] != c {
			return fmt.Sprintf("account %s: %d lines committed up to count %d: not a prefix of its output", a, c, maxCount[a])
		}
	}
	return ""
}

// TestCheckPrefix makes sure checkPrefix can fail.
func TestCheckPrefix(t *testing.T) {
	want := demo.Expected(50, 3)
	var acc0 []string // account 0's lines, in order
	for _, l := range want {
		if strings.Split(l, ",")[1] == "0" {
			acc0 = append(acc0, l)
		}
	}
	for _, c := range []struct {
		name string
		got  []string
		ok   bool
	}{
		{"all", want, true},
		{"empty", nil, true},
		{"prefix", acc0[:3], true},
		{"gap", []string{acc0[0], acc0[2]}, false},
		{"duplicate", []string{acc0[0], acc0[0]}, false},
		{"foreign", []string{"1,2,3,4"}, false},
	} {
		if msg := checkPrefix(want, c.got); (msg == "") != c.ok {
			t.Errorf("%s: checkPrefix = %q, want ok=%v", c.name, msg, c.ok)
		}
	}
}
