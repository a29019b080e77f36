package nexmark_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/connectors/nexmark"
	"github.com/weirstream/weir/internal/config"
	q "github.com/weirstream/weir/internal/jobs/nexmark"
	"github.com/weirstream/weir/internal/testutil"
)

// windowedRun runs query over events (a source with nexmark's
// watermarks) at parallelism p on backend and returns the committed
// lines.
func windowedRun(t *testing.T, query *q.Query, params q.Params, p int, backend string, events func(*weir.Env) weir.Stream[nexmark.Event]) []string {
	t.Helper()
	dir := t.TempDir()
	params.Out = filepath.Join(dir, "out")
	cfg := testutil.FaultConfig(t, p, filepath.Join(dir, "state"), "20ms", false, map[string]string{
		config.StateBackendType:   backend,
		config.StateBackendLSMDir: filepath.Join(dir, "lsm"),
	})
	env := weir.NewEnv(weir.WithConfig(cfg))
	log, _ := testutil.Observe(env, nil)
	if err := query.Build(env, events(env), params); err != nil {
		t.Fatalf("build %s: %v", query.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Execute(ctx, query.Name); err != nil {
		t.Fatalf("%s: %v\nlog:\n%s", query.Name, err, log.String())
	}
	lines, err := file.ReadCommitted(params.Out)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestWindowQueriesOverManyWindows runs the window queries over events
// spread over 40 s of event time (500 events/s instead of 10 M/s, at
// which the harness's 20 000 events are 2 ms: a single window), so that
// many hop/tumble windows fire, sessions end and restart, and windows
// fire both on the watermark and at the end of the input. Heap only: the
// harness runs them on lsm, and sliding windows on lsm are slow under
// -race (q5: 5 windows per bid, each a read-modify-write).
func TestWindowQueriesOverManyWindows(t *testing.T) {
	const n = 20_000
	gen := nexmark.DefaultConfig()
	gen.FirstEventRate = 500
	for _, name := range []string{"q5", "q7", "q8", "q11", "q12"} {
		query, err := q.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			p       int
			backend string
		}{{1, "heap"}, {2, "heap"}} {
			t.Run(fmt.Sprintf("%s/p%d/%s", name, c.p, c.backend), func(t *testing.T) {
				params := q.Params{Gen: gen}
				lines := windowedRun(t, query, params, c.p, c.backend, func(env *weir.Env) weir.Stream[nexmark.Event] {
					return nexmark.Events(env, gen, n, 0)
				})
				if err := q.Verify(query, params, n, lines); err != nil {
					t.Fatal(err)
				}
				if len(lines) == 0 {
					t.Fatalf("%s committed no rows", name)
				}
				t.Logf("%d lines committed, equal to the reference", len(lines))
			})
		}
	}
}

// BenchmarkWindowReferences measures the references (the benchmark's
// hand-written baselines) over 1 M events at the default rate: ns and
// allocations per event.
func BenchmarkWindowReferences(b *testing.B) {
	const n = 1_000_000
	for _, name := range []string{"q5", "q7", "q8", "q11", "q12"} {
		query, err := q.Lookup(name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			params := q.Params{Gen: nexmark.DefaultConfig()}
			b.ReportAllocs()
			for range b.N {
				if err := query.Reference(params, n, &q.RefOut{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}
