package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/connectors/nexmark"
	nxq "github.com/weirstream/weir/internal/jobs/nexmark"
)

// End-to-end tests of `weir run nexmark`: a query checked by --verify and
// by the test itself, with injected failures, usage errors, and
// SIGKILL-and-rerun of stateful queries on both state backends.

const nexmarkExactOK = "verify: committed output equals the reference computation exactly"

func nexmarkArgs(dir, query string, events, p int, extra ...string) []string {
	return append([]string{"run", "nexmark", "--query", query, "--events", strconv.Itoa(events),
		"--parallelism", strconv.Itoa(p), "--checkpoint-interval", "50ms",
		"--state-dir", filepath.Join(dir, "state"), "--out", filepath.Join(dir, "out"), "-q"}, extra...)
}

// checkNexmarkOut checks the committed output with nexmark.Verify itself,
// over the default generator with the given first-event rate.
func checkNexmarkOut(t *testing.T, dir, query string, events int64, rate float64) []string {
	t.Helper()
	q, err := nxq.Lookup(query)
	if err != nil {
		t.Fatal(err)
	}
	gen := nexmark.DefaultConfig()
	if rate > 0 {
		gen.FirstEventRate = rate
	}
	out := filepath.Join(dir, "out")
	lines, err := file.ReadCommitted(out) // in commit order, for changelogs
	if err != nil {
		t.Fatal(err)
	}
	p := nxq.Params{Gen: gen, Out: out}
	if err := nxq.Verify(q, p, events, lines); err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 && !q.MayBeEmpty {
		t.Fatalf("%s committed no rows over %d events: the test proves nothing", query, events)
	}
	assertNoInProgress(t, out)
	return lines
}

func TestNexmarkVerify(t *testing.T) {
	const events = 50_000
	for _, tc := range []struct {
		name  string
		p     int
		extra []string
	}{
		{"p1", 1, nil},
		{"p3", 3, nil},
		{"p2-failures", 2, []string{"--inject-failures", "2", "--fault-seed", "7", "--rate-limit", "50000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			res := runWeir(t, time.Minute, nexmarkArgs(dir, "q0", events, tc.p, append(tc.extra, "--verify")...)...)
			wantExit(t, res, 0)
			wantLine(t, res.stderr, nexmarkExactOK)
			if tc.extra != nil {
				wantFired(t, res.stderr, 2)
			}
			lines := checkNexmarkOut(t, dir, "q0", events, 0)
			wantLine(t, res.stderr, fmt.Sprintf("committed %d lines to %s", len(lines), filepath.Join(dir, "out")))
			// The rows are the bids: q0 passes each one through.
			if f := strings.Count(lines[0], ","); f < 4 {
				t.Errorf("q0 line %q has %d commas, want at least 4 (auction,bidder,price,dateTime,extra)", lines[0], f)
			}
		})
	}
}

// TestNexmarkUsage: a bad flag is a usage error (exit 2) that names it,
// before anything runs.
func TestNexmarkUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown query", []string{"--query", "q6"}, []string{"--query", `unknown Nexmark query "q6"`, "q0", "Flink's suite does not run q6"}},
		{"no query", nil, []string{"--query is required", "q0"}},
		{"no events", []string{"--query", "q0", "--events", "0"}, []string{"--events 0: must be at least 1"}},
		{"negative rate limit", []string{"--query", "q0", "--rate-limit", "-1"}, []string{"--rate-limit -1"}},
		{"bad base time", []string{"--query", "q0", "--base-time", "yesterday"}, []string{`--base-time "yesterday"`}},
		{"bad first-event rate", []string{"--query", "q0", "--first-event-rate", "0"}, []string{"--first-event-rate 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := append([]string{"run", "nexmark", "--state-dir", filepath.Join(dir, "state"), "-q"}, tc.args...)
			res := runWeir(t, 30*time.Second, args...)
			wantExit(t, res, 2)
			wantContains(t, res.stderr, tc.want...)
		})
	}
}

// nexmarkKillQueries are the stateful queries the kill test runs, each if
// it is registered: windows (q5), a join feeding an updating aggregate
// (q4), TopN (q9) and a changelog TopN (q19).
var nexmarkKillQueries = []string{"q5", "q4", "q9", "q19"}

// nexmarkKillAll runs the kill test for every stateful event-time query.
var nexmarkKillAll = flag.Bool("nexmark-all", false, "TestNexmarkKillRerun: kill and rerun every stateful event-time Nexmark query on both backends, not only q5, q4, q9 and q19 (slow)")

// TestNexmarkKillRerun starts a throttled query with frequent checkpoints,
// SIGKILLs it once some have completed, and starts the same command again
// on the same --state-dir: the rerun resumes the checkpoint and --verify
// passes. The event-time rate is low so that windows close all through the
// run, not only at its end. q0 runs too (on heap), so that the test checks
// the exactly-once sink whatever queries are registered.
func TestNexmarkKillRerun(t *testing.T) {
	const (
		events = 60_000
		rate   = 5_000 // events per second of event time: 12 s in all
	)
	type kcase struct{ query, backend string }
	cases := []kcase{{"q0", "heap"}}
	queries := nexmarkKillQueries
	if *nexmarkKillAll {
		queries = nil
		for _, name := range nxq.Names() {
			if q, _ := nxq.Lookup(name); q.Stateful && !q.ProcessingTime {
				queries = append(queries, name)
			}
		}
	}
	for _, q := range queries {
		for _, b := range []string{"heap", "lsm"} {
			cases = append(cases, kcase{q, b})
		}
	}
	for k, c := range cases {
		t.Run(c.query+"/"+c.backend, func(t *testing.T) {
			if _, err := nxq.Lookup(c.query); err != nil {
				t.Skipf("%s is not registered on this build: %v", c.query, err)
			}
			t.Parallel()
			dir := t.TempDir()
			args := nexmarkArgs(dir, c.query, events, 1+k%2, "--state-backend", c.backend,
				"--first-event-rate", strconv.Itoa(rate), "--rate-limit", "20000", "-v")
			r := startWeir(t, time.Minute, args...)
			r.waitCompleted(t, 3)
			if !r.kill() {
				t.Fatalf("the run ended before its kill:\n%s", tail(r.stderr(), 3000))
			}
			res := runWeir(t, time.Minute, append(args, "--verify")...)
			wantExit(t, res, 0)
			wantContains(t, res.stderr, "job nexmark: resuming checkpoint", nexmarkExactOK)
			checkNexmarkOut(t, dir, c.query, events, rate)
		})
	}
}
