package postgres

import (
	"context"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/testutil"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// demoColumns are the columns of the demo's result table.
var demoColumns = []string{"i", "account", "count", "total"}

// demoTable is the demo's result table, created if absent.
const demoTable = "i bigint, account bigint, count bigint, total bigint"

func demoRow(r demo.Result, dst []any) []any { return append(dst, r.I, r.Account, r.Count, r.Total) }

// job is one in-process run of the demo pipeline with a PostgreSQL sink.
type job struct {
	n, k        int64
	parallelism int
	stateDir    string // reused to resume from the previous run's checkpoints
	interval    string
	rate        float64
	plan        *faults.Plan
	restartNone bool
	sink        func(weir.Stream[demo.Result]) // adds the sink under test
}

func newJob(t testing.TB, n, k int64, p int, sink func(weir.Stream[demo.Result])) *job {
	return &job{n: n, k: k, parallelism: p, stateDir: filepath.Join(t.TempDir(), "state"), interval: "10ms", sink: sink}
}

type jobResult struct {
	err      error
	inj      *faults.Injector
	env      *weir.Env
	log      *syncBuffer
	restarts int64
	elapsed  time.Duration
}

func (j *job) run(t testing.TB, ctx context.Context, onStart func(*weir.Env)) jobResult {
	t.Helper()
	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, j.parallelism, j.stateDir, j.interval, j.restartNone, nil)))
	return j.runEnv(t, ctx, env, onStart)
}

// runEnv is run in an environment made by the caller (for its config).
func (j *job) runEnv(t testing.TB, ctx context.Context, env *weir.Env, onStart ...func(*weir.Env)) jobResult {
	t.Helper()
	res := jobResult{env: env}
	res.log, res.inj = testutil.Observe(env, j.plan)
	j.sink(demo.Aggregate(env, demo.Options{Events: j.n, Keys: j.k, Rate: j.rate}))
	for _, f := range onStart {
		if f == nil {
			continue
		}
		done := make(chan struct{})
		defer func() { <-done }()
		go func() { defer close(done); f(env) }()
	}
	start := time.Now()
	// Not "demo": the CLI's end-to-end test runs a job of that name
	// against the same database in parallel, and a sink rolls back the
	// prepared transactions its job name and uid own that no checkpoint
	// covers, whichever table they write.
	res.err = env.Execute(ctx, "pgdemo")
	res.elapsed = time.Since(start)
	res.restarts = hooks.Plan(env).Status.Restarts.Load()
	return res
}

// onePoint is a plan of failures at one point, one per attempt.
func onePoint(failures int, seed, span int64, p faults.Point) *faults.Plan {
	return &faults.Plan{Failures: failures, Seed: seed, Span: span, Points: []faults.Point{p}, OnePerAttempt: true}
}

// resultLines reads the demo's result table as "i,account,count,total"
// lines, the format demo.Expected uses.
func resultLines(t testing.TB, db *pgx.Conn, table string) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), "SELECT i, account, count, total FROM "+pgx.Identifier{table}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	var r demo.Result
	var buf []byte
	for rows.Next() {
		if err := rows.Scan(&r.I, &r.Account, &r.Count, &r.Total); err != nil {
			t.Fatal(err)
		}
		buf = r.AppendLine(buf[:0])
		out = append(out, string(buf))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// restoredPaths lists the checkpoint paths a run's log says it restored.
func restoredPaths(log string) []string {
	var out []string
	for _, m := range restoringRE.FindAllStringSubmatch(log, -1) {
		out = append(out, m[1])
	}
	return out
}

var restoringRE = regexp.MustCompile(`msg=restoring .*?path=(\S+)`)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writers.
type syncBuffer = testutil.SyncBuffer
