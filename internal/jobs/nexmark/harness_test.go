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
	"github.com/weirstream/weir/internal/faults"
	q "github.com/weirstream/weir/internal/jobs/nexmark"
	"github.com/weirstream/weir/internal/testutil"
)

// run is one execution of a query over events 0 … n-1.
type run struct {
	query   *q.Query
	n       int64
	p       int
	backend string
	plan    *faults.Plan
	dir     string
	params  q.Params
}

func newRun(t *testing.T, name string, n int64, p int, backend string) *run {
	t.Helper()
	query, err := q.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	return &run{query: query, n: n, p: p, backend: backend, dir: dir,
		params: q.Params{Gen: nexmark.DefaultConfig(), Out: filepath.Join(dir, "out")}}
}

// execute runs the job to its end and returns the committed lines.
func (r *run) execute(t *testing.T) ([]string, *faults.Injector) {
	t.Helper()
	cfg := testutil.FaultConfig(t, r.p, filepath.Join(r.dir, "state"), "20ms", false, map[string]string{
		config.StateBackendType:   r.backend,
		config.StateBackendLSMDir: filepath.Join(r.dir, "lsm"),
	})
	env := weir.NewEnv(weir.WithConfig(cfg))
	log, inj := testutil.Observe(env, r.plan)
	events := nexmark.Events(env, r.params.Gen, r.n, 0)
	if err := r.query.Build(env, events, r.params); err != nil {
		t.Fatalf("build %s: %v", r.query.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Execute(ctx, r.query.Name); err != nil {
		t.Fatalf("%s: %v\nlog:\n%s", r.query.Name, err, log.String())
	}
	lines, err := file.ReadCommitted(r.params.Out)
	if err != nil {
		t.Fatal(err)
	}
	return lines, inj
}

// TestQueriesMatchReference runs every query at parallelism 1 and 2 on
// the heap backend (and the stateful ones on lsm at p=2) and compares the
// committed output with the query's hand-written reference.
func TestQueriesMatchReference(t *testing.T) {
	const n = 20_000
	for _, name := range q.Names() {
		query, _ := q.Lookup(name)
		cases := []struct {
			p       int
			backend string
		}{{1, "heap"}, {2, "heap"}}
		if query.Stateful {
			cases = append(cases, struct {
				p       int
				backend string
			}{2, "lsm"})
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/p%d/%s", name, c.p, c.backend), func(t *testing.T) {
				r := newRun(t, name, n, c.p, c.backend)
				lines, _ := r.execute(t)
				if err := q.Verify(r.query, r.params, r.n, lines); err != nil {
					t.Fatal(err)
				}
				if len(lines) == 0 && !query.MayBeEmpty {
					t.Fatalf("%s committed no rows over %d events: the test proves nothing", name, n)
				}
				t.Logf("%d lines committed, equal to the reference", len(lines))
			})
		}
	}
}
