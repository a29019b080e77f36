package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// --verify in weak mode passes exactly when the measured lines are within
// the accounting (missing lines at least the lost records and at most the
// lost plus the possibly duplicated, duplicated lines at most the possibly
// duplicated), prints one verify line either way, and holds a run that
// lost and duplicated nothing to the failure-free output.
func TestDemoVerifyWeak(t *testing.T) {
	const n, k = 300, 11
	want := demo.Expected(n, k)
	lost := slices.Delete(slices.Clone(want), 10, 13)                                   // 3 missing
	dup := append(slices.Clone(want), want[5], "7,1,99,99")                             // 2 duplicated
	swapped := append(slices.Delete(slices.Clone(want), 20, 22), want[5], want[6])      // 2 missing, 2 duplicated
	wrong := append(slices.Clone(want[:n-1]), strings.Replace(want[n-1], ",", ",0", 1)) // index there, count off
	for _, c := range []struct {
		name            string
		lines           []string
		lost, dupl      int64
		unknown         bool
		line, errSubstr string
	}{
		{name: "exact", lines: want,
			line: "verify: weak mode: 0 missing, 0 duplicated lines (accounting: 0 lost, 0 possibly duplicated)"},
		{name: "lost, counted", lines: lost, lost: 3,
			line: "verify: weak mode: 3 missing, 0 duplicated lines (accounting: 3 lost, 0 possibly duplicated)"},
		{name: "duplicated, counted", lines: dup, dupl: 2,
			line: "verify: weak mode: 0 missing, 2 duplicated lines (accounting: 0 lost, 2 possibly duplicated)"},
		{name: "re-emitted otherwise, counted", lines: swapped, dupl: 5,
			line: "verify: weak mode: 2 missing, 2 duplicated lines (accounting: 0 lost, 5 possibly duplicated)"},
		{name: "lost, not counted", lines: lost, lost: 2,
			line:      "verify: weak mode: 3 missing, 0 duplicated lines (accounting: 2 lost, 0 possibly duplicated)",
			errSubstr: "not within the accounting: 3 lines missing, beyond the 2 records counted lost and 0 possibly duplicated"},
		{name: "both off", lines: dup, lost: 1,
			line:      "verify: weak mode: 0 missing, 2 duplicated lines (accounting: 1 lost, 0 possibly duplicated)",
			errSubstr: "0 lines missing but 1 records counted lost; 2 lines duplicated but 0 records counted possibly duplicated"},
		{name: "nothing lost, output wrong", lines: wrong,
			line:      "verify: weak mode: 0 missing, 0 duplicated lines (accounting: 0 lost, 0 possibly duplicated)",
			errSubstr: "nothing lost or duplicated, yet the committed output differs"},
		{name: "accounting unknown, exact", lines: want, unknown: true,
			line: `verify: weak mode: 0 missing, 0 duplicated lines (accounting: not available here; the JobManager's REST API shows it, GET /jobs/<jobid> "weak")`},
		{name: "accounting unknown, lost", lines: lost, unknown: true, lost: 3,
			line:      `verify: weak mode: 3 missing, 0 duplicated lines (accounting: not available here; the JobManager's REST API shows it, GET /jobs/<jobid> "weak")`,
			errSubstr: "the accounting is not available"},
	} {
		d := &demoFlags{events: n, keys: k}
		var out bytes.Buffer
		var acc *app.WeakFigures
		if !c.unknown {
			acc = &app.WeakFigures{Lost: c.lost, Duplicated: c.dupl}
		}
		err := d.verifyWeak(&out, acc, c.lines)
		if first, _, _ := strings.Cut(out.String(), "\n"); first != c.line {
			t.Errorf("%s: printed %q\nwant       %q", c.name, first, c.line)
		}
		switch {
		case c.errSubstr == "" && err != nil:
			t.Errorf("%s: %v, want success", c.name, err)
		case c.errSubstr != "" && (err == nil || !strings.Contains(err.Error(), c.errSubstr)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.errSubstr)
		}
	}
}

var weakFailoverLine = regexp.MustCompile(`(?m)^weak failover: (\d+) failures, (\d+) task restarts, (\d+) replayed, (\d+) lost, (\d+) duplicated$`)

// weir run demo in WEAKLY_CONSISTENT mode with injected failures: each
// failure that fired restarted exactly one task, the run ends with the
// weak failover line, and --verify finds the committed lines' missing and
// duplicated counts equal to the accounting (exit 0), the two lines
// agreeing on lost and duplicated. (Not every planned failure fires: a
// source does not rewind for a failure downstream, so the job may end
// before it reaches a planned fault's position again.)
func TestDemoWeakVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts with backoff take a few seconds")
	}
	type tc struct {
		name     string
		p        string
		logMax   string // execution.checkpointing.weak.in-flight-log.max-records; "" default
		wantLost bool
	}
	cases := []tc{{"p1", "1", "", false}, {"p2", "2", "", false}, {"p3", "3", "", false}, {"p2-small-log", "2", "100", true}}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"run", "demo", "--events", "100000", "--parallelism", c.p,
				"-D", "execution.checkpointing.mode=WEAKLY_CONSISTENT", "--checkpoint-interval", "50ms",
				"--inject-failures", "20", "--fault-seed", fmt.Sprint(11 + i),
				// (A short fixed delay: 20 restarts on the default
				// exponential backoff take seconds each.)
				"-D", "restart-strategy.type=fixed-delay", "-D", "restart-strategy.fixed-delay.delay=10ms", "-D", "restart-strategy.fixed-delay.attempts=100",
				"--state-dir", filepath.Join(dir, "state"), "--out", filepath.Join(dir, "out"), "-q", "--verify"}
			if c.logMax != "" {
				args = append(args, "-D", "execution.checkpointing.weak.in-flight-log.max-records="+c.logMax)
			}
			res := runWeir(t, time.Minute, args...)
			wantExit(t, res, 0)
			fired := firedRE.FindStringSubmatch(res.stderr)
			if fired == nil {
				t.Fatalf("no fault summary in stderr:\n%s", tail(res.stderr, 2000))
			}
			m := weakFailoverLine.FindStringSubmatch(res.stderr)
			if m == nil {
				t.Fatalf("no weak failover line in stderr:\n%s", tail(res.stderr, 2000))
			}
			if m[1] != fired[1] || m[2] != fired[1] {
				t.Errorf("%s failures and %s task restarts for %s fired failures; each failure restarts exactly one task:\n%s",
					m[1], m[2], fired[1], tail(res.stderr, 2000))
			}
			lost, dup := m[4], m[5]
			// (verify exits 0 only when the measured missing and
			// duplicated lines are within the accounting.)
			wantContains(t, res.stderr, "duplicated lines (accounting: "+lost+" lost, "+dup+" possibly duplicated)\n")
			if !c.wantLost && (lost != "0" || dup != "0") {
				t.Errorf("the default log covers every gap, yet %s lost and %s duplicated", lost, dup)
			}
			if c.wantLost && lost == "0" {
				t.Logf("no record lost with a log of %s records: the failures hit tasks whose logs still held what they needed", c.logMax)
			}
		})
	}
}
