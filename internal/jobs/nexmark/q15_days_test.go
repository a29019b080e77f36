package nexmark_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/connectors/nexmark"
	"github.com/weirstream/weir/internal/config"
	q "github.com/weirstream/weir/internal/jobs/nexmark"
	"github.com/weirstream/weir/internal/testutil"
)

// runAggQuery runs query name over events 0 … n-1 of gen at parallelism p
// on backend and returns the committed lines (harness_test.go's run,
// with the generator's configuration as a parameter).
func runAggQuery(t *testing.T, name string, gen nexmark.Config, n int64, p int, backend string) (*q.Query, q.Params, []string) {
	t.Helper()
	query, err := q.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	params := q.Params{Gen: gen, Out: filepath.Join(dir, "out")}
	cfg := testutil.FaultConfig(t, p, filepath.Join(dir, "state"), "20ms", true, map[string]string{
		config.StateBackendType:   backend,
		config.StateBackendLSMDir: filepath.Join(dir, "lsm"),
	})
	env := weir.NewEnv(weir.WithConfig(cfg))
	log, _ := testutil.Observe(env, nil)
	if err := query.Build(env, nexmark.Events(env, gen, n, 0), params); err != nil {
		t.Fatalf("build %s: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Execute(ctx, name); err != nil {
		t.Fatalf("%s: %v\nlog:\n%s", name, err, log.String())
	}
	lines, err := file.ReadCommitted(params.Out)
	if err != nil {
		t.Fatal(err)
	}
	return query, params, lines
}

// TestAggQueriesAcrossDays runs q15–q19 over events spread over several
// days (0.02 events/s of event time: 4 000 events span 2.3 days, starting
// 10 minutes before a midnight), so the per-day groups of q15–q17 split
// at the UTC day boundaries, and compares with the references. (The
// harness covers the lsm backend; heap keeps this quick under -race.)
func TestAggQueriesAcrossDays(t *testing.T) {
	gen := nexmark.DefaultConfig()
	gen.FirstEventRate = 0.02
	gen.BaseTime -= 10 * 60 * 1000 // 2025-12-31T23:50:00Z
	const n = 4_000
	for _, name := range []string{"q15", "q16", "q17", "q18", "q19"} {
		t.Run(name, func(t *testing.T) {
			query, params, lines := runAggQuery(t, name, gen, n, 2, "heap")
			if err := q.Verify(query, params, n, lines); err != nil {
				t.Fatal(err)
			}
			table, err := q.ApplyChangelog(lines)
			if err != nil {
				t.Fatal(err)
			}
			days := map[string]bool{}
			for _, row := range table {
				for _, d := range []string{"2025-12-31", "2026-01-01", "2026-01-02", "2026-01-03"} {
					if strings.Contains(row, ","+d+",") || strings.HasPrefix(row, d+",") {
						days[d] = true
					}
				}
			}
			if name == "q15" {
				var want []string
				for _, row := range table {
					want = append(want, row[:10])
				}
				if fmt.Sprint(want) != "[2025-12-31 2026-01-01 2026-01-02 2026-01-03]" {
					t.Fatalf("q15's days are %v, want the four from 2025-12-31 to 2026-01-03", want)
				}
			}
			if name == "q16" {
				// Events every 50 s from 23:50: each channel's latest minute
				// on 2025-12-31 is from 23:50 to 23:59, and the latest of
				// them is 23:59.
				latest := ""
				for _, row := range table {
					if _, rest, ok := strings.Cut(row, ",2025-12-31,"); ok {
						m := rest[:5]
						if m < "23:50" || m > "23:59" {
							t.Fatalf("q16 row %q: want a minute from 23:50 to 23:59", row)
						}
						latest = max(latest, m)
					}
				}
				if latest != "23:59" {
					t.Fatalf("q16's latest minute on 2025-12-31 is %q, want 23:59", latest)
				}
			}
			if (name == "q16" || name == "q17") && len(days) != 4 {
				t.Fatalf("%s's rows have days %v, want four", name, days)
			}
			t.Logf("%d lines committed, final table of %d rows equal to the reference", len(lines), len(table))
		})
	}
}
