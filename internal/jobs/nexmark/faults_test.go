package nexmark_test

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/connectors/nexmark"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	q "github.com/weirstream/weir/internal/jobs/nexmark"
	"github.com/weirstream/weir/internal/testutil"
)

// longFaults runs the full failure matrix: every event-time query at every
// fault point on both backends. By default the test runs a covering
// subset, to keep the package within its time budget under -race.
var longFaults = flag.Bool("long", false, "run the full failure matrix of the Nexmark queries (every query × fault point × backend; slow)")

// faultsPerRun is how many failures each run injects, one per attempt.
const faultsPerRun = 3

// faultEvents is the events of each run, at faultEventRate events per
// second of event time: 10 s, so that 2 s–10 s windows close all through
// the run rather than only at its end.
const (
	faultEvents    = 10_000
	faultEventRate = 1_000
)

// faultRateLimit throttles the source so that each attempt spans several
// checkpoints and the failures land mid-run; lsm checkpoints more slowly
// than heap under -race.
func faultRateLimit(backend string) float64 {
	if backend == "lsm" {
		return 10_000
	}
	return 20_000
}

// faultCase is one run: a query with failures at one point on one backend.
type faultCase struct {
	query   *q.Query
	point   faults.Point
	backend string
	seed    int64
}

// faultCases lists the runs. By default run k takes the k-th event-time
// query (cycling when there are fewer queries than runs), fault point
// k mod 5 and backend k mod 2: as the number of points is odd, any ten
// consecutive runs hold every (point, backend) pair, so every point is
// covered across the queries and each backend sees every point (a Latin
// square over the queries); there are at least ten runs. -long runs
// every query at every point on both backends.
func faultCases(t *testing.T) []faultCase {
	var queries []*q.Query
	for _, name := range q.Names() {
		query, _ := q.Lookup(name)
		if query.ProcessingTime {
			continue // its rows depend on the wall clock, not on the events alone
		}
		queries = append(queries, query)
	}
	if len(queries) == 0 {
		t.Skip("no event-time query is registered")
	}
	points := faults.AllPoints()
	backends := []string{"heap", "lsm"}
	var cases []faultCase
	if *longFaults {
		for qi, query := range queries {
			for pi, pt := range points {
				for bi, b := range backends {
					cases = append(cases, faultCase{query, pt, b, int64(1 + 101*qi + 13*pi + bi)})
				}
			}
		}
		return cases
	}
	runs := max(len(queries), len(points)*len(backends))
	for k := range runs {
		cases = append(cases, faultCase{queries[k%len(queries)], points[k%len(points)], backends[k%len(backends)], int64(1 + 7*k)})
	}
	return cases
}

// TestQueriesExactlyOnceUnderFaults runs each event-time query with
// injected failures (testutil.FaultConfig: frequent checkpoints, fast
// restarts) and requires the committed output to equal the query's
// reference computation: state and timers restored from the checkpoint,
// the source replaying after it, no row lost or repeated in the committed
// files, for changelogs no retraction without its row.
func TestQueriesExactlyOnceUnderFaults(t *testing.T) {
	var mu sync.Mutex
	fromCheckpoint, restarts := 0, 0
	t.Cleanup(func() {
		if !t.Failed() && 3*fromCheckpoint < restarts {
			t.Errorf("only %d of %d restarts restored a checkpoint; the failures land too early to test restore", fromCheckpoint, restarts)
		}
		t.Logf("%d of %d restarts restored a checkpoint", fromCheckpoint, restarts)
	})
	for _, c := range faultCases(t) {
		t.Run(fmt.Sprintf("%s/%s/%s", c.query.Name, c.point, c.backend), func(t *testing.T) {
			t.Parallel()
			res := runWithFaults(t, c)
			if res.err != nil {
				t.Fatalf("%s: %v\nlog:\n%.4000s", c.query.Name, res.err, res.log)
			}
			if got := res.inj.Fired(); got != faultsPerRun {
				t.Errorf("%d of %d planned failures fired: %v", got, faultsPerRun, res.inj.Log())
			}
			if res.stats.Restarts != faultsPerRun {
				t.Errorf("restarts = %d, want %d (one per injected failure)", res.stats.Restarts, faultsPerRun)
			}
			if err := q.Verify(c.query, res.params, faultEvents, res.lines); err != nil {
				t.Fatalf("committed output differs from the reference: %v\nfired: %v", err, res.inj.Log())
			}
			if len(res.lines) == 0 && !c.query.MayBeEmpty {
				t.Fatalf("%s committed no rows over %d events: the test proves nothing", c.query.Name, faultEvents)
			}
			mu.Lock()
			fromCheckpoint += res.restored
			restarts += int(res.stats.Restarts)
			mu.Unlock()
			t.Logf("exact: %d lines, %d restarts (%d from a checkpoint), %d checkpoints, %v; fired %v",
				len(res.lines), res.stats.Restarts, res.restored, res.stats.CompletedCheckpoints, res.elapsed.Round(time.Millisecond), res.inj.Log())
		})
	}
}

// faultResult is what one run with failures left behind.
type faultResult struct {
	err      error
	params   q.Params
	inj      *faults.Injector
	log      *testutil.SyncBuffer
	stats    weir.JobStats
	lines    []string
	restored int // restores from a checkpoint ("msg=restoring" in the log)
	elapsed  time.Duration
}

// runWithFaults runs c's query over faultEvents events with c's failures.
func runWithFaults(t *testing.T, c faultCase) faultResult {
	t.Helper()
	dir := t.TempDir()
	gen := nexmark.DefaultConfig()
	gen.FirstEventRate = faultEventRate
	res := faultResult{params: q.Params{Gen: gen, Out: filepath.Join(dir, "out")}}
	cfg := testutil.FaultConfig(t, 2, filepath.Join(dir, "state"), "10ms", false, map[string]string{
		config.StateBackendType:   c.backend,
		config.StateBackendLSMDir: filepath.Join(dir, "lsm"),
	})
	env := weir.NewEnv(weir.WithConfig(cfg))
	plan := &faults.Plan{Failures: faultsPerRun, Seed: c.seed, Span: faultEvents, Points: []faults.Point{c.point}, OnePerAttempt: true}
	res.log, res.inj = testutil.Observe(env, plan)
	if err := q.BuildQuery(env, c.query, faultEvents, faultRateLimit(c.backend), res.params); err != nil {
		t.Fatalf("build %s: %v", c.query.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	job, err := env.Start(ctx, c.query.Name)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	res.err = job.Wait()
	res.elapsed = time.Since(start)
	res.stats = job.Stats()
	res.restored = strings.Count(res.log.String(), "msg=restoring")
	if res.err == nil {
		res.lines, res.err = file.ReadCommitted(res.params.Out)
	}
	return res
}
