package nexmark_test

import (
	"context"
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

// runSlow runs query name over 20 000 events at 2 000 events per second
// of event time (10 s), throttled to 100 000 events per wall-clock
// second with a watermark every millisecond, so that the watermark
// (dateTime − 4 s) passes auctions' expires and waiting bids' dateTime
// long before the end of the input: q4's and q9's event-time cleanup runs
// mid-stream, not only at the final watermark. It checks the committed
// output against the reference and returns the size of the final table.
// (harness_test.go's run, with the generator rate, the throttle and the
// watermark interval changed.)
func runSlow(t *testing.T, name string, p int, backend string) int {
	t.Helper()
	const n = 20_000
	query, err := q.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	params := q.Params{Gen: nexmark.DefaultConfig(), Out: filepath.Join(dir, "out")}
	params.Gen.FirstEventRate = 2000
	cfg := testutil.FaultConfig(t, p, filepath.Join(dir, "state"), "20ms", false, map[string]string{
		config.StateBackendType:      backend,
		config.StateBackendLSMDir:    filepath.Join(dir, "lsm"),
		config.AutoWatermarkInterval: "1ms",
	})
	env := weir.NewEnv(weir.WithConfig(cfg))
	log, _ := testutil.Observe(env, nil)
	events := nexmark.Events(env, params.Gen, n, 100_000)
	if err := query.Build(env, events, params); err != nil {
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
	if err := q.Verify(query, params, n, lines); err != nil {
		t.Fatal(err)
	}
	table, err := q.ApplyChangelog(lines)
	if err != nil {
		t.Fatal(err)
	}
	return len(table)
}

// TestQ4CleanupKeepsResult runs q4 with its state cleaned up as the
// watermark passes auctions and waiting bids. On heap only: the lsm
// backend runs the same cleanup at the final watermark in
// TestQueriesMatchReference, and is slow under -race.
func TestQ4CleanupKeepsResult(t *testing.T) {
	if n := runSlow(t, "q4", 2, "heap"); n == 0 {
		t.Fatal("q4 has an empty final table: the test proves nothing")
	}
}
