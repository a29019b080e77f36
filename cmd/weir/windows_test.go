package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/windows"
)

// End-to-end tests of `weir run windows`: each assigner at parallelism 1-3
// checked by --verify and by the test itself, with injected failures at
// every fault point, with SIGKILL-and-rerun, with late events under
// failures, and on a cluster. Sizes are small so that the file stays well
// under a minute with -race on a loaded machine.

// windowsCase is one assigner with parameters that give it work: many
// windows, and for sessions both merged and separate sessions (an
// account's events come 50 ms apart, ±20 ms of disorder, gap 50 ms).
type windowsCase struct {
	name string
	args []string // --window and the time flags
}

var windowsCases = []windowsCase{
	{"tumble", []string{"--window", "tumble:500", "--max-disorder", "200"}},
	{"slide", []string{"--window", "slide:1s,250ms", "--max-disorder", "200ms"}},
	{"session", []string{"--window", "session:50", "--max-disorder", "20"}},
}

// windowsOptions are the options the same flags give, for the test's own
// comparison with windows.Expected.
func windowsOptions(t *testing.T, events, keys int64, args []string) windows.Options {
	t.Helper()
	o := windows.Options{Events: events, Keys: keys, OutOfOrderness: -1, MaxDisorder: 2000}
	for i := 0; i+1 < len(args); i += 2 {
		v := args[i+1]
		var err error
		switch args[i] {
		case "--window":
			o.Window, err = windows.ParseSpec(v)
		case "--max-disorder":
			o.MaxDisorder, err = windows.ParseMillis(args[i], v)
		case "--out-of-orderness":
			o.OutOfOrderness, err = windows.ParseMillis(args[i], v)
		case "--allowed-lateness":
			o.Lateness, err = windows.ParseMillis(args[i], v)
		case "--event-spacing":
			o.Spacing, err = windows.ParseMillis(args[i], v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	o.Defaults()
	return o
}

func windowsArgs(dir string, events, p int, extra ...string) []string {
	return append([]string{"run", "windows", "--events", strconv.Itoa(events), "--keys", "50",
		"--parallelism", strconv.Itoa(p), "--checkpoint-interval", "50ms",
		"--state-dir", filepath.Join(dir, "state"), "--out", filepath.Join(dir, "out"), "-q"}, extra...)
}

// checkWindowsOut compares the committed output with windows.Expected (no
// late events possible: O = M) and checks that nothing is left in progress.
func checkWindowsOut(t *testing.T, dir string, o windows.Options) {
	t.Helper()
	out := filepath.Join(dir, "out")
	if late := committed(t, filepath.Join(out, "late")); len(late) > 0 {
		t.Fatalf("%d late events with O = M, first %q", len(late), late[0])
	}
	if err := windows.Verify(o, committed(t, out), nil); err != nil {
		t.Fatal(err)
	}
	assertNoInProgress(t, out)
	assertNoInProgress(t, filepath.Join(out, "late"))
}

const windowsExactOK = "verify: committed output equals the failure-free output exactly"

func TestWindowsVerify(t *testing.T) {
	const events = 20_000
	for _, c := range windowsCases {
		for p := 1; p <= 3; p++ {
			t.Run(fmt.Sprintf("%s/p%d", c.name, p), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				res := runWeir(t, time.Minute, windowsArgs(dir, events, p, append(c.args, "--verify")...)...)
				wantExit(t, res, 0)
				wantLine(t, res.stderr, windowsExactOK)
				wantContains(t, res.stderr, "committed ", " window lines to ", " and 0 late events to ")
				checkWindowsOut(t, dir, windowsOptions(t, events, 50, c.args))
			})
		}
	}
}

// TestWindowsInjectedFailures injects failures at each fault point in turn
// (--fault-points), the assigners and parallelisms rotating over the
// points; the committed output must still be exact.
func TestWindowsInjectedFailures(t *testing.T) {
	const events = 40_000
	for k, pt := range faults.AllPoints() {
		c := windowsCases[k%len(windowsCases)]
		p := 2 + k%2
		t.Run(fmt.Sprintf("%s/%s/p%d", pt, c.name, p), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := windowsArgs(dir, events, p, append(c.args, "--verify", "--inject-failures", "3",
				"--fault-points", string(pt), "--fault-seed", strconv.Itoa(11+k))...)
			res := runWeir(t, time.Minute, args...)
			wantExit(t, res, 0)
			wantFired(t, res.stderr, 3)
			wantContains(t, res.stderr, fmt.Sprintf(", %s 3\n", pt))
			wantLine(t, res.stderr, windowsExactOK)
			checkWindowsOut(t, dir, windowsOptions(t, events, 50, c.args))
		})
	}
}

// TestWindowsLateUnderFailures runs tumbling windows with O < M: events
// come late (watermarks are emitted every millisecond and the rate is
// bounded, so the watermark keeps up with the events and overtakes the
// disordered ones). The conservation check must hold under failures at
// all points, and there must be late events, or the test checks nothing.
func TestWindowsLateUnderFailures(t *testing.T) {
	const events = 40_000
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"lateness 0", []string{"--out-of-orderness", "100"}},
		{"lateness 300ms", []string{"--out-of-orderness", "100ms", "--allowed-lateness", "300ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			flags := append([]string{"--window", "tumble:500", "--rate", "40000", "-D", "pipeline.auto-watermark-interval=1ms"}, tc.args...)
			args := windowsArgs(dir, events, 2, append(flags, "--verify", "--inject-failures", "5", "--fault-seed", "5")...)
			res := runWeir(t, time.Minute, args...)
			wantExit(t, res, 0)
			wantFired(t, res.stderr, 5)
			if !strings.Contains(res.stderr, "verify: every event is counted in its window's last firing or listed as late, exactly once") {
				t.Fatalf("no conservation OK line:\n%s", tail(res.stderr, 2000))
			}
			out := filepath.Join(dir, "out")
			lines, late := committed(t, out), committed(t, filepath.Join(out, "late"))
			if len(late) == 0 {
				t.Fatalf("no late events with O < M: the conservation check was not exercised")
			}
			o := windowsOptions(t, events, 50, flags)
			if err := windows.Verify(o, lines, late); err != nil {
				t.Fatal(err)
			}
			// Dropping one late event must break the check: it is not vacuous.
			if err := windows.Verify(o, lines, late[1:]); err == nil {
				t.Fatal("Verify accepted the output without one of its late events")
			}
			t.Logf("%d firings, %d late events", len(lines), len(late))
		})
	}
}

// TestWindowsKillRerun SIGKILLs `weir run windows` at random moments and
// starts the same command again on the same --state-dir; once a run
// completes, the committed output is exactly the failure-free one. Between
// kills it never holds a line the failure-free output lacks.
func TestWindowsKillRerun(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("kill delays from seed %d (reproduce with -weir.seed=%d)", seed, seed)
	const events = 60_000
	for k, c := range windowsCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			args := windowsArgs(dir, events, 1+k%3, append(c.args, "--rate", "40000")...)
			o := windowsOptions(t, events, 50, c.args)
			want := countLines(windows.Expected(o))
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(k)))
			finished, resumed, endedAtKill, kills := false, false, false, 0
			for run := range 3 {
				delay := 300*time.Millisecond + time.Duration(rng.Int64N(int64(700*time.Millisecond)))
				r := startWeir(t, time.Minute, args...)
				select {
				case <-r.done:
				case <-time.After(delay):
				}
				if r.kill() {
					t.Logf("run %d: SIGKILL after %s", run, delay)
					kills++
				} else if res := r.wait(); res.code != 0 {
					t.Fatalf("run %d ended with exit code %d before its kill:\n%s", run, res.code, tail(res.stderr, 3000))
				} else {
					finished = true
				}
				resumed = resumed || strings.Contains(r.stderr(), "job windows: resuming checkpoint")
				if _, err := os.Stat(out); errors.Is(err, fs.ErrNotExist) {
					continue
				}
				got := committed(t, out)
				if x := extras(want, got); len(x) > 0 {
					t.Fatalf("after run %d: %d committed lines not in the failure-free output, first %q", run, len(x), x[0])
				}
				if finished {
					break
				}
				if complete(want, got) {
					// The kill landed after the last commit, before the
					// process ended: its sinks may not have closed (a
					// hidden in-progress file left), so one more run is
					// still due, as for any killed run.
					t.Logf("run %d: its job's output was complete when the kill landed", run)
					endedAtKill = true
					break
				}
			}
			if !finished {
				res := runWeir(t, time.Minute, append(args, "--verify")...)
				if endedAtKill && refusedAsFinished(res) {
					t.Logf("the rerun was refused: the killed run had recorded its end")
				} else {
					wantExit(t, res, 0)
					wantLine(t, res.stderr, windowsExactOK)
				}
				resumed = resumed || strings.Contains(res.stderr, "job windows: resuming checkpoint")
			}
			if kills > 0 && !resumed {
				t.Errorf("%d kills, but no rerun resumed a checkpoint: the kills tested nothing", kills)
			}
			checkWindowsOut(t, dir, o)
		})
	}
}

// TestClusterWindows submits the job to a cluster of a JobManager and two
// TaskManagers, with --verify on the client.
func TestClusterWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of three processes")
	}
	const events = 20_000
	c := startE2ECluster(t, 2, 2)
	c.waitTaskManagers(2)
	out := filepath.Join(c.dir, "out")
	wc := windowsCases[1]
	args := append([]string{"run", "windows", "--jobmanager", c.rpc, "--events", strconv.Itoa(events), "--keys", "50",
		"--parallelism", "3", "--checkpoint-interval", "100ms", "--out", out, "--verify"}, wc.args...)
	res := runWeir(t, 2*time.Minute, args...)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stderr, c.logs())
	}
	wantLine(t, res.stderr, windowsExactOK)
	if err := windows.Verify(windowsOptions(t, events, 50, wc.args), committed(t, out), committed(t, filepath.Join(out, "late"))); err != nil {
		t.Fatal(err)
	}
}
