package ordercheck_test

import (
	"context"
	"fmt"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/testutil"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/ordercheck"
	"github.com/weirstream/weir/internal/jobstatus"
)

// run is one execution of the ordercheck job.
type run struct {
	opts     ordercheck.Options
	mode     string // execution.checkpointing.mode
	interval string // execution.checkpointing.interval
	batch    int
	credits  int
	plan     *faults.Plan
	stateDir string
	// setup, if set, prepares the Env before the job is built.
	setup func(*weir.Env)
}

func newRun(t testing.TB, p int, records int64) *run {
	t.Helper()
	return &run{
		opts: ordercheck.Options{
			Sources: p, Records: records, Lanes: 16, Payload: 64,
			SinkRate: 40_000, Store: ordercheck.NewStore(),
		},
		mode:     config.ModeExactlyOnce,
		interval: "20ms",
		// Small batches and two credits per channel: the sources block as
		// soon as a few hundred records per channel wait for the sink.
		batch:    32,
		credits:  2,
		stateDir: filepath.Join(t.TempDir(), "state"),
	}
}

func (r *run) config(t testing.TB, extra map[string]string) *weir.Config {
	t.Helper()
	cfg := weir.NewConfig()
	set := func(k, v string) {
		if err := cfg.Set(k, v); err != nil {
			t.Fatalf("config %s=%s: %v", k, v, err)
		}
	}
	set(config.ParallelismDefault, fmt.Sprint(r.opts.Sources))
	set(config.CheckpointsDir, r.stateDir)
	set(config.CheckpointingInterval, r.interval)
	set(config.CheckpointingMode, r.mode)
	set(config.BatchSize, fmt.Sprint(r.batch))
	set(config.NetworkCreditsPerChannel, fmt.Sprint(r.credits))
	set(config.RestartStrategyType, config.RestartFixed)
	set(config.FixedDelayAttempts, "100")
	set(config.FixedDelayDelay, "1ms")
	for k, v := range extra {
		set(k, v)
	}
	return cfg
}

// result is what one execution left behind.
type result struct {
	err     error
	env     *weir.Env
	inj     *faults.Injector
	log     *syncBuffer
	elapsed time.Duration
	report  ordercheck.Report
	samples samples
}

// execute builds the job on a fresh Env, runs it to the end while sampling
// it, and analyses the committed output.
func (r *run) execute(t *testing.T) result {
	t.Helper()
	return r.executeWith(t, nil)
}

// executeWith is execute with further configuration keys.
func (r *run) executeWith(t *testing.T, extra map[string]string) result {
	t.Helper()
	env := weir.NewEnv(weir.WithConfig(r.config(t, extra)))
	res := result{env: env, log: &syncBuffer{}}
	hooks.Plan(env).Logger = slog.New(slog.NewTextHandler(res.log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if r.plan != nil {
		res.inj = faults.New(*r.plan)
		hooks.Plan(env).Faults = res.inj
	}
	if r.setup != nil {
		r.setup(env)
	}
	if err := ordercheck.Build(env, r.opts); err != nil {
		t.Fatal(err)
	}
	runtime.GC() // start from the previous test's live heap, not its garbage
	stop := make(chan struct{})
	done := make(chan samples)
	go func() { done <- sample(env, r.opts.Store, stop) }()
	start := time.Now()
	res.err = env.Execute(context.Background(), "ordercheck")
	res.elapsed = time.Since(start)
	close(stop)
	res.samples = <-done
	res.report = ordercheck.Analyse(r.opts.Store.Committed(), r.opts.Sources, r.opts.Records, r.opts.Lanes)
	return res
}

// samples is what the monitor saw while the job ran.
type samples struct {
	n int
	// heapPeak is the largest HeapInuse sampled.
	heapPeak uint64
	// lagPeak is the largest difference between the records the sources
	// emitted and the records the sinks took: what was in flight.
	lagPeak int64
	// sourceBackPressured counts source subtask samples in which the
	// subtask had waited for credit since the previous sample, out of
	// sourceLooks source subtask samples.
	sourceBackPressured, sourceLooks int
	// checkpoints holds the last state seen of every checkpoint, by id.
	checkpoints map[int64]jobstatus.CheckpointStats
	// pressed holds the ids of the checkpoints seen in progress in a sample
	// where a source subtask was backpressured.
	pressed map[int64]bool
}

// sample watches the job until stop closes. The ticker paces observation
// only; nothing in the test waits on it for correctness.
func sample(env *weir.Env, store *ordercheck.Store, stop <-chan struct{}) samples {
	s := samples{checkpoints: map[int64]jobstatus.CheckpointStats{}, pressed: map[int64]bool{}}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	look := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.n++
		s.heapPeak = max(s.heapPeak, ms.HeapInuse)
		st := hooks.Plan(env).Status
		s.lagPeak = max(s.lagPeak, st.SourceRecords.Load()-store.Written())
		pressed := false
		for _, ts := range st.Tasks() {
			if strings.HasPrefix(ts.Name, "sequences") {
				s.sourceLooks++
				if ts.BackPressured {
					s.sourceBackPressured++
					pressed = true
				}
			}
		}
		for _, c := range st.Checkpoints(time.Now()) {
			s.checkpoints[int64(c.ID)] = c
			if pressed && c.Status == jobstatus.CheckpointInProgress {
				s.pressed[int64(c.ID)] = true
			}
		}
	}
	for {
		select {
		case <-stop:
			look()
			return s
		case <-tick.C:
			look()
		}
	}
}

// completedDurations returns the durations of the completed checkpoints
// seen, sorted.
func (s samples) completedDurations() []time.Duration {
	var d []time.Duration
	for _, c := range s.checkpoints {
		if c.Status == jobstatus.CheckpointCompleted {
			d = append(d, c.Duration)
		}
	}
	slices.Sort(d)
	return d
}

// completedUnderPressure counts the completed checkpoints that were seen
// in progress while a source subtask was backpressured.
func (s samples) completedUnderPressure() int {
	n := 0
	for id := range s.pressed {
		if s.checkpoints[id].Status == jobstatus.CheckpointCompleted {
			n++
		}
	}
	return n
}

// durationSummary formats min/median/max of sorted durations.
func durationSummary(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	r := func(x time.Duration) time.Duration { return x.Round(100 * time.Microsecond) }
	return fmt.Sprintf("n=%d min=%v median=%v max=%v", len(d), r(d[0]), r(d[len(d)/2]), r(d[len(d)-1]))
}

// faultPlan is a OnePerAttempt plan over the sources' records.
func faultPlan(failures int, seed int64, span int64, points ...faults.Point) *faults.Plan {
	return &faults.Plan{Failures: failures, Seed: seed, Span: span, Points: points, OnePerAttempt: true}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writers.
type syncBuffer = testutil.SyncBuffer
