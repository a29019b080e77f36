package bench

// bench rescale: the pause of an in-place rescale (Job.Rescale: stop on a
// final checkpoint in the job's folder, run again at the new parallelism
// from it in the same run) against stop-with-savepoint and a new
// submission from the savepoint at the new parallelism, in the same
// process and run, on a keyed state of a given size. The pause is from
// the decision (the call) to the first record a keyed subtask at the new
// parallelism processed.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
)

// rescaleResult is what `weir bench rescale --json` prints (documented in
// BENCHMARKS.md).
type rescaleResult struct {
	Benchmark   string `json:"benchmark"` // "rescale"
	Backend     string `json:"backend"`
	Keys        int64  `json:"keys"`
	ValueBytes  int    `json:"value_bytes"`
	StateBytes  int64  `json:"state_bytes"` // the last checkpoint's full size before the rescale
	From        int    `json:"from_parallelism"`
	To          int    `json:"to_parallelism"`
	Incremental bool   `json:"incremental"`
	// InPlacePauseMs is the in-place rescale's pause: Job.Rescale called
	// to the first record processed at the new parallelism;
	// InPlaceStopMs the part until Rescale returned (its final
	// checkpoint completed).
	InPlacePauseMs float64 `json:"in_place_pause_ms"`
	InPlaceStopMs  float64 `json:"in_place_stop_ms"`
	// SavepointPauseMs is the same pause through Job.Stop with a
	// savepoint and a new Env started from it (no new process: the
	// baseline's own start-up is not counted); SavepointStopMs the part
	// until Stop returned (the savepoint written).
	SavepointPauseMs float64 `json:"savepoint_pause_ms"`
	// The restores' share of each pause: the slowest subtask's time from
	// its start until its operators had restored their state.
	InPlaceRestoreMs   float64 `json:"in_place_restore_ms"`
	SavepointRestoreMs float64 `json:"savepoint_restore_ms"`
	SavepointStopMs    float64 `json:"savepoint_stop_ms"`
	// Speedup is SavepointPauseMs / InPlacePauseMs.
	Speedup float64 `json:"speedup"`
	Seconds float64 `json:"seconds"`
}

func newRescaleBench() *cobra.Command {
	var (
		keys       int64
		valueBytes int
		from, to   int
		backend    string
		dir        string
		rate       int
		asJSON     bool
		defines    []string
	)
	c := &cobra.Command{
		Use:   "rescale",
		Short: "Pause of an in-place rescale against stop-with-savepoint and resubmission, on keyed state of a given size",
		Long: `rescale loads --keys keys with --value-bytes values each into a keyed
value state (a source at parallelism 1 -> key by -> the state at
--from), then updates random keys at --rate records/s, with incremental
checkpoints every 2 s. Once the load is checkpointed it rescales the job
in place to --to (Job.Rescale) and measures the pause: from the call to
the first record a keyed subtask at --to processed. In the same process
it then runs the baseline: the same job loaded alike, stopped with a
savepoint (Job.Stop) and started from it at --to in a new Env. Both
pauses and their ratio are printed. With WEIR_BENCH_LOG=1 in the
environment both jobs log at debug level to stderr, to see where a pause
goes.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if keys < 1 || valueBytes < 1 || from < 1 || to < 1 || rate < 1 {
				return usagef("--keys, --value-bytes, --from, --to and --rate must be at least 1")
			}
			if from == to {
				return usagef("--from and --to are both %d: nothing to rescale", from)
			}
			if backend != "heap" && backend != "lsm" {
				return usagef("--backend %q: want heap or lsm", backend)
			}
			if dir == "" {
				d, err := os.MkdirTemp("", "weir-bench-rescale-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dir = d
			} else if err := checkWritableDir("--dir", dir); err != nil {
				return err
			}
			start := time.Now()
			res := rescaleResult{Benchmark: "rescale", Backend: backend, Keys: keys, ValueBytes: valueBytes, From: from, To: to, Incremental: backend == "lsm"}
			p := rescaleParams{keys: keys, valueBytes: valueBytes, from: from, to: to, backend: backend, rate: rate, defines: defines}
			var err error
			if res.StateBytes, res.InPlaceStopMs, res.InPlacePauseMs, res.InPlaceRestoreMs, err = p.inPlace(c.Context(), filepath.Join(dir, "in-place")); err != nil {
				return fmt.Errorf("in-place rescale: %w", err)
			}
			if _, res.SavepointStopMs, res.SavepointPauseMs, res.SavepointRestoreMs, err = p.viaSavepoint(c.Context(), filepath.Join(dir, "savepoint")); err != nil {
				return fmt.Errorf("stop with savepoint and resubmit: %w", err)
			}
			res.Speedup = res.SavepointPauseMs / res.InPlacePauseMs
			res.Seconds = time.Since(start).Seconds()
			if asJSON {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			fmt.Fprintf(c.OutOrStdout(), "rescale %d -> %d, %s, %d keys, state %s\n", from, to, backend, keys, bytes(res.StateBytes))
			fmt.Fprintf(c.OutOrStdout(), "  in place:             pause %.0f ms (final checkpoint %.0f ms, restore %.0f ms)\n", res.InPlacePauseMs, res.InPlaceStopMs, res.InPlaceRestoreMs)
			fmt.Fprintf(c.OutOrStdout(), "  savepoint + resubmit: pause %.0f ms (savepoint %.0f ms, restore %.0f ms)\n", res.SavepointPauseMs, res.SavepointStopMs, res.SavepointRestoreMs)
			fmt.Fprintf(c.OutOrStdout(), "  in place is %.1fx faster\n", res.Speedup)
			return nil
		},
	}
	c.Flags().Int64Var(&keys, "keys", 100_000, "keys in the state")
	c.Flags().IntVar(&valueBytes, "value-bytes", 1000, "bytes per value (keys x value-bytes is the state's size)")
	c.Flags().IntVar(&from, "from", 2, "parallelism before the rescale")
	c.Flags().IntVar(&to, "to", 3, "parallelism after it")
	c.Flags().StringVar(&backend, "backend", "lsm", "state backend: heap or lsm (lsm checkpoints incrementally)")
	c.Flags().StringVar(&dir, "dir", "", "folder for checkpoints, savepoints and lsm stores (default: a temporary folder, removed after)")
	c.Flags().IntVar(&rate, "rate", 20_000, "updates per second after the load")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().StringArrayVarP(&defines, "define", "D", nil, "key=value configuration for both runs (e.g. -D state.backend.local-recovery=true)")
	return c
}

type rescaleParams struct {
	keys       int64
	valueBytes int
	from, to   int
	backend    string
	rate       int
	defines    []string
}

// env returns an Env at parallelism p with checkpoints under dir.
func (p rescaleParams) env(dir string, parallelism int, from string) (*weir.Env, error) {
	cfg := weir.NewConfig()
	set := [][2]string{
		{config.ParallelismDefault, fmt.Sprint(parallelism)},
		{config.CheckpointingInterval, "2s"},
		{config.CheckpointsDir, filepath.Join(dir, "checkpoints")},
		{config.SavepointsDir, filepath.Join(dir, "savepoints")},
		{config.CheckpointsNumRetained, "1"},
		{config.RestartStrategyType, config.RestartNone},
		{config.StateBackendType, p.backend},
		{config.StateBackendLSMDir, filepath.Join(dir, "lsm")},
	}
	if p.backend == "lsm" {
		set = append(set, [2]string{config.StateBackendIncremental, "true"})
	}
	for _, kv := range set {
		if err := cfg.Set(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	if err := hooks.Config(cfg).SetOverrides(p.defines); err != nil {
		return nil, usagef("-D: %v", err)
	}
	opts := []weir.Option{weir.WithConfig(cfg)}
	if os.Getenv("WEIR_BENCH_LOG") != "" {
		opts = append(opts, weir.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	if from != "" {
		opts = append(opts, weir.WithRestoreFrom(from))
	}
	return weir.NewEnv(opts...), nil
}

// probe records when the load ended and, per parallelism, when a keyed
// subtask at that parallelism processed its first record.
type rescaleProbe struct {
	loaded atomic.Bool
	mu     sync.Mutex
	first  map[int]time.Time
}

func (pr *rescaleProbe) processed(parallelism int) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if _, ok := pr.first[parallelism]; !ok {
		pr.first[parallelism] = time.Now()
	}
}

func (pr *rescaleProbe) firstAt(parallelism int) (time.Time, bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	t, ok := pr.first[parallelism]
	return t, ok
}

// start builds and starts the job.
func (p rescaleParams) start(ctx context.Context, env *weir.Env, name string, pr *rescaleProbe) (*weir.Job, error) {
	src := weir.FromSource(env, func() weir.Source[int64] { return &rescaleSource{keys: p.keys, rate: p.rate, probe: pr} }).UID("updates").Parallelism(1)
	keyed := weir.KeyBy(src, func(k int64) int64 { return k })
	out := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, struct{}] {
		return &rescaleFn{valueBytes: p.valueBytes, probe: pr}
	}).UID("state")
	weir.SinkTo(out, func() weir.Sink[struct{}] { return discard[struct{}]{} }).UID("discard")
	return env.Start(ctx, name)
}

// loadedAndCheckpointed waits until the load ended and a checkpoint
// completed after it, and returns that checkpoint's full size.
func loadedAndCheckpointed(ctx context.Context, env *weir.Env, job *weir.Job, pr *rescaleProbe) (int64, error) {
	st := hooks.Plan(env).Status
	var after int64 = -1
	for {
		if after < 0 && pr.loaded.Load() {
			after = st.LastCheckpointID.Load()
		}
		if after >= 0 && st.LastCheckpointID.Load() > after {
			return st.LastCheckpointFullSize.Load(), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-job.Done():
			return 0, fmt.Errorf("the job ended before the load was checkpointed: %v", job.Wait())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// awaitFirst waits until a keyed subtask at parallelism p processed a
// record and returns the time since t0 in milliseconds.
func awaitFirst(ctx context.Context, job *weir.Job, pr *rescaleProbe, p int, t0 time.Time) (float64, error) {
	for {
		if at, ok := pr.firstAt(p); ok {
			return float64(at.Sub(t0)) / float64(time.Millisecond), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-job.Done():
			return 0, fmt.Errorf("the job ended before it processed at parallelism %d: %v", p, job.Wait())
		case <-time.After(time.Millisecond):
		}
	}
}

func (p rescaleParams) inPlace(ctx context.Context, dir string) (size int64, stopMs, pauseMs, restoreMs float64, err error) {
	pr := &rescaleProbe{first: map[int]time.Time{}}
	env, err := p.env(dir, p.from, "")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	job, err := p.start(ctx, env, "rescale-in-place", pr)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer func() { job.Cancel(); _ = job.Wait() }()
	if size, err = loadedAndCheckpointed(ctx, env, job, pr); err != nil {
		return 0, 0, 0, 0, err
	}
	t0 := time.Now()
	if _, err := job.Rescale(ctx, weir.Rescale{Parallelism: p.to}); err != nil {
		return 0, 0, 0, 0, err
	}
	stopMs = float64(time.Since(t0)) / float64(time.Millisecond)
	pauseMs, err = awaitFirst(ctx, job, pr, p.to, t0)
	restoreMs = float64(hooks.Plan(env).Status.LastRestoreDuration.Load()) / float64(time.Millisecond)
	return size, stopMs, pauseMs, restoreMs, err
}

func (p rescaleParams) viaSavepoint(ctx context.Context, dir string) (size int64, stopMs, pauseMs, restoreMs float64, err error) {
	pr := &rescaleProbe{first: map[int]time.Time{}}
	env, err := p.env(dir, p.from, "")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	job, err := p.start(ctx, env, "rescale-savepoint", pr)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if size, err = loadedAndCheckpointed(ctx, env, job, pr); err != nil {
		job.Cancel()
		_ = job.Wait()
		return 0, 0, 0, 0, err
	}
	t0 := time.Now()
	sp, err := job.Stop(ctx, filepath.Join(dir, "savepoints"))
	if err != nil {
		job.Cancel()
		_ = job.Wait()
		return 0, 0, 0, 0, err
	}
	if err := job.Wait(); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("the stopped job: %w", err)
	}
	stopMs = float64(time.Since(t0)) / float64(time.Millisecond)
	env2, err := p.env(dir, p.to, sp)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	job2, err := p.start(ctx, env2, "rescale-savepoint-resumed", pr)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer func() { job2.Cancel(); _ = job2.Wait() }()
	pauseMs, err = awaitFirst(ctx, job2, pr, p.to, t0)
	restoreMs = float64(hooks.Plan(env2).Status.LastRestoreDuration.Load()) / float64(time.Millisecond)
	return size, stopMs, pauseMs, restoreMs, err
}

// rescaleSource emits every key once (the load), then random keys at a
// rate; its position is operator state.
type rescaleSource struct {
	keys  int64
	rate  int
	probe *rescaleProbe
	next  int64
	pos   *weir.OperatorList[int64]
	last  time.Time
}

func (s *rescaleSource) Open(_ context.Context, rc *weir.RuntimeContext) (err error) {
	s.pos, err = weir.GetOperatorListState[int64](rc, "pos")
	if err != nil {
		return err
	}
	for _, v := range s.pos.Get() {
		s.next = v
	}
	return nil
}

func (s *rescaleSource) Read(ctx context.Context, dst []int64, limit int) ([]int64, error) {
	if s.next < s.keys {
		for ; s.next < s.keys && limit > 0; limit-- {
			dst = append(dst, s.next)
			s.next++
		}
		return dst, nil
	}
	s.probe.loaded.Store(true)
	// After the load: rate/100 updates every 10 ms, keys spread by a
	// multiplicative hash of the position.
	if d := 10*time.Millisecond - time.Since(s.last); d > 0 {
		select {
		case <-ctx.Done():
			return dst, ctx.Err()
		case <-time.After(d):
		}
	}
	s.last = time.Now()
	for n := min(limit, max(1, s.rate/100)); n > 0; n-- {
		dst = append(dst, int64(uint64(s.next)*0x9E3779B97F4A7C15%uint64(s.keys)))
		s.next++
	}
	return dst, nil
}

func (s *rescaleSource) SnapshotState(int64) error   { s.pos.Update([]int64{s.next}); return nil }
func (s *rescaleSource) Close(context.Context) error { return nil }

// rescaleFn keeps a value of valueBytes per key.
type rescaleFn struct {
	valueBytes  int
	probe       *rescaleProbe
	parallelism int
	seen        bool
	v           weir.ValueState[[]byte]
}

func (f *rescaleFn) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	f.parallelism = kc.Parallelism()
	f.v, err = weir.GetValueState[[]byte](kc, "value")
	return err
}

func (f *rescaleFn) ProcessElement(k int64, _ *weir.KeyedContext[int64], _ *weir.Collector[struct{}]) error {
	if !f.seen {
		f.seen = true
		f.probe.processed(f.parallelism)
	}
	old, _ := f.v.Value()
	if len(old) != 0 && len(old) != f.valueBytes {
		return errors.New("rescale bench: a restored value has the wrong size")
	}
	// Incompressible values (xorshift), so that the state's size on disk
	// and in checkpoints is keys x value-bytes.
	b := make([]byte, f.valueBytes)
	x := uint64(k)*0x9E3779B97F4A7C15 | 1
	for i := 0; i < len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(x >> (8 * j))
		}
	}
	f.v.Update(b)
	return nil
}
