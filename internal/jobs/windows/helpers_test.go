package windows_test

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
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/windows"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/testutil"
)

// long runs the full matrices (every fault point with every assigner at
// every parallelism on both backends). By default the tests run a covering
// subset, to keep the package under its time budget under -race on a
// shared machine.
var long = flag.Bool("long", false, "run the full failure matrices of the windows job (slow)")

// frun is one execution of a windowed job with failures, rescaling or
// unaligned checkpoints.
type frun struct {
	o        windows.Options
	p        int
	backend  string // state.backend.type
	interval string // execution.checkpointing.interval
	plan     *faults.Plan
	extra    map[string]string
	stateDir string // reused to resume
	from     string // weir.WithRestoreFrom, if set
	// build adds the job to env; nil builds windows.Build.
	build func(env *weir.Env, o windows.Options)
	// sample, if set, watches the checkpoints while the job runs.
	sample bool
}

func newFRun(t *testing.T, o windows.Options, p int, backend string) *frun {
	t.Helper()
	dir := t.TempDir()
	o.Defaults()
	o.Out = filepath.Join(dir, "out")
	return &frun{o: o, p: p, backend: backend, interval: "10ms", stateDir: filepath.Join(dir, "state")}
}

// fresult is what one execution left behind.
type fresult struct {
	err        error
	env        *weir.Env
	inj        *faults.Injector
	log        *testutil.SyncBuffer
	stats      weir.JobStats
	lines      []string // committed, of every run into this output folder
	late       []string
	readErr    error
	elapsed    time.Duration
	restored   int // restores from a checkpoint ("msg=restoring" in the log)
	replayed   int64
	persisted  int64 // the largest persisted in-flight bytes of a completed checkpoint seen
	unaligned  int   // completed checkpoints seen that some subtask took unaligned
	checkpoint int64 // completed checkpoints
}

func (r *frun) config(t *testing.T) *weir.Config {
	t.Helper()
	extra := map[string]string{config.StateBackendType: r.backend, config.StateBackendLSMDir: filepath.Join(filepath.Dir(r.stateDir), "lsm")}
	for k, v := range r.extra {
		extra[k] = v
	}
	return testutil.FaultConfig(t, r.p, r.stateDir, r.interval, false, extra)
}

// execute builds the job on a fresh Env and runs it until it ends or ctx
// is done; onStart, if set, runs beside the job with it.
func (r *frun) execute(t *testing.T, ctx context.Context, onStart func(*weir.Job)) fresult {
	t.Helper()
	opts := []weir.Option{weir.WithConfig(r.config(t))}
	if r.from != "" {
		opts = append(opts, weir.WithRestoreFrom(r.from))
	}
	env := weir.NewEnv(opts...)
	res := fresult{env: env}
	res.log, res.inj = testutil.Observe(env, r.plan)
	if r.build != nil {
		r.build(env, r.o)
	} else {
		windows.Build(env, r.o)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	job, err := env.Start(ctx, "windows")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	if r.sample {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res.persisted, res.unaligned = sampleCheckpoints(hooks.Plan(env).Status, stop)
		}()
	}
	if onStart != nil {
		wg.Add(1)
		go func() { defer wg.Done(); onStart(job) }()
	}
	res.err = job.Wait()
	close(stop)
	wg.Wait()
	res.elapsed = time.Since(start)
	res.stats = job.Stats()
	res.restored = strings.Count(res.log.String(), "msg=restoring")
	res.replayed = hooks.Plan(env).Status.RestoredChannelStateBytes.Load()
	res.checkpoint = res.stats.CompletedCheckpoints
	res.lines, res.readErr = file.ReadCommitted(r.o.Out)
	// Jobs without a late sink (the timers job) have no late/ folder.
	if late := filepath.Join(r.o.Out, "late"); res.readErr == nil && r.build == nil {
		res.late, res.readErr = file.ReadCommitted(late)
	}
	return res
}

// sampleCheckpoints watches the job's checkpoint history until stop closes
// and returns the largest in-flight data a completed checkpoint persisted
// and how many completed checkpoints were unaligned. The ticker paces
// observation only; no result depends on when it looks, except that a
// checkpoint must stay in the history long enough to be seen once.
func sampleCheckpoints(st *jobstatus.JobStatus, stop <-chan struct{}) (persisted int64, unaligned int) {
	seen := map[int64]bool{}
	look := func() {
		for _, c := range st.Checkpoints(time.Now()) {
			if c.Status != jobstatus.CheckpointCompleted || seen[int64(c.ID)] {
				continue
			}
			seen[int64(c.ID)] = true
			persisted = max(persisted, c.PersistedInFlightBytes)
			if c.Unaligned {
				unaligned++
			}
		}
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			look()
			return persisted, unaligned
		case <-tick.C:
			look()
		}
	}
}

// checkFailures requires every planned failure to have fired, each causing
// one restart, and the job to have finished.
func checkFailures(t *testing.T, res fresult, planned int) {
	t.Helper()
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%.4000s", res.err, res.log)
	}
	if res.readErr != nil {
		t.Fatal(res.readErr)
	}
	if got := res.inj.Fired(); got != planned {
		t.Errorf("%d of %d planned failures fired: %v", got, planned, res.inj.Log())
	}
	if res.stats.Restarts != int64(planned) {
		t.Errorf("restarts = %d, want %d (one per injected failure)", res.stats.Restarts, planned)
	}
}

// faultPlan is a OnePerAttempt plan over the source's events.
func faultPlan(failures int, seed int64, span int64, points ...faults.Point) *faults.Plan {
	return &faults.Plan{Failures: failures, Seed: seed, Span: span, Points: points, OnePerAttempt: true}
}

// spec parses a window flag or fails the test.
func spec(t *testing.T, s string) windows.Spec {
	t.Helper()
	sp, err := windows.ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// smallOptions are the events of the failure tests: few events (each
// attempt still spans several checkpoints at the rate the tests set) over
// windows that close all through the run.
func smallOptions(t *testing.T, window string, n int64) windows.Options {
	t.Helper()
	o := windows.Options{Events: n, Keys: 23, Window: spec(t, window), MaxDisorder: 40, OutOfOrderness: -1}
	if o.Window.Kind == "session" {
		// Sparse events per account, so sessions both merge and close.
		o.Spacing, o.MaxDisorder = 2, 10
	}
	o.Defaults()
	return o
}

// rateFor is the source rate of the failure tests: each attempt must
// last long enough for checkpoints to complete between failures, and the
// lsm backend under -race checkpoints far more slowly than the heap one.
func rateFor(backend string) float64 {
	if backend == "lsm" {
		return 6_000
	}
	return 15_000
}

func (r fresult) summary() string {
	return fmt.Sprintf("%d lines, %d late, %d restarts (%d from a checkpoint), %d checkpoints, %v",
		len(r.lines), len(r.late), r.stats.Restarts, r.restored, r.checkpoint, r.elapsed.Round(time.Millisecond))
}
