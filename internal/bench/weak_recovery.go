package bench

// bench weak's recovery section: the demo's computation into an in-memory
// two-phase-commit sink, with failures of one keyed subtask at planned
// times; and its cost section, the same job unthrottled without failures.
//
// The failures come from the keyed function itself, not from
// internal/faults: the function knows its subtask, so it fails exactly
// the subtask planned and records the failure's time, and the first
// record its next instance processes is the end of that failure's
// recovery. Every mode gets the same failures at the same times.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// errPlannedFailure is what the keyed function returns to fail its task.
var errPlannedFailure = errors.New("bench weak: planned failure of a keyed subtask")

// recFailure is one planned failure that fired.
type recFailure struct {
	subtask int
	at      time.Time
	resumed time.Time // zero until the subtask's next instance processed a record
}

// recProbe is shared by the keyed function's instances of one run (all
// in this process): the failure armed for a subtask, the failures that
// fired, and every subtask's processed records.
type recProbe struct {
	armed atomic.Int32 // subtask+1 of the armed failure; 0: none
	// processed counts, per subtask, the records it processed for the
	// first time: a record replayed after a rollback (a barrier mode's
	// global failover rewinds the sources) is work done again, not
	// progress. Each source subtask emits its accounts' events in index
	// order and a channel keeps order, so a record is new if its index is
	// above the highest seen from its source subtask (seen, per subtask
	// and source subtask, kept across the subtask's instances).
	processed []*atomic.Int64
	seen      [][]atomic.Int64
	keys      int64

	mu      sync.Mutex
	fired   []recFailure
	pending []int // per subtask: index into fired waiting for its recovery, -1: none
}

func newRecProbe(p int, keys int64) *recProbe {
	pr := &recProbe{pending: make([]int, p), keys: keys}
	for i := range p {
		pr.processed = append(pr.processed, new(atomic.Int64))
		pr.pending[i] = -1
		seen := make([]atomic.Int64, p)
		for j := range seen {
			seen[j].Store(-1)
		}
		pr.seen = append(pr.seen, seen)
	}
	return pr
}

// progress counts event i at subtask s if it is new.
func (pr *recProbe) progress(s int, i int64) {
	hw := &pr.seen[s][demo.Account(i, pr.keys)%int64(len(pr.seen[s]))]
	if i > hw.Load() {
		hw.Store(i)
		pr.processed[s].Add(1)
	}
}

// fire fails subtask s if a failure is armed for it.
func (pr *recProbe) fire(s int) bool {
	want := int32(s + 1)
	if pr.armed.Load() != want || !pr.armed.CompareAndSwap(want, 0) {
		return false
	}
	pr.mu.Lock()
	pr.pending[s] = len(pr.fired)
	pr.fired = append(pr.fired, recFailure{subtask: s, at: time.Now()})
	pr.mu.Unlock()
	return true
}

// started is called by an instance of subtask s on its first record: if
// s failed, its recovery ends now.
func (pr *recProbe) started(s int) {
	now := time.Now()
	pr.mu.Lock()
	if k := pr.pending[s]; k >= 0 {
		pr.fired[k].resumed = now
		pr.pending[s] = -1
	}
	pr.mu.Unlock()
}

func (pr *recProbe) failures() []recFailure {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return slices.Clone(pr.fired)
}

// recAggregate is demo.AggregateEvents' function on the latency bench's
// stamped events, counting what it processed and failing when planned.
type recAggregate struct {
	probe   *recProbe
	subtask int
	fresh   bool
	state   weir.ValueState[latencyTotals]
}

func (a *recAggregate) Open(ctx context.Context, kc *weir.KeyedContext[int64]) (err error) {
	a.subtask, a.fresh = kc.Subtask(), true
	a.state, err = weir.GetValueState[latencyTotals](kc, "totals")
	return err
}

func (a *recAggregate) ProcessElement(e stampedEvent, _ *weir.KeyedContext[int64], out *weir.Collector[demo.Result]) error {
	if a.fresh {
		a.fresh = false
		a.probe.started(a.subtask)
	}
	if a.probe.fire(a.subtask) {
		return errPlannedFailure
	}
	t, _ := a.state.Value()
	t.Count++
	t.Total += e.Amount
	a.state.Update(t)
	out.Collect(demo.Result{I: e.I, Account: e.Account, Count: t.Count, Total: t.Total})
	a.probe.progress(a.subtask, e.I)
	return nil
}

// recStore is the "external system" of the in-memory two-phase-commit
// sink: it outlives the sink's instances (they all run in this process),
// as a database outlives the tasks writing to it. With keep false it
// holds nothing (the cost section: only the protocol's cost).
type recStore struct {
	keep bool

	mu        sync.Mutex
	next      int64
	open      map[int64][]demo.Result // begun or pre-committed
	done      map[int64]bool          // committed
	committed []demo.Result
}

func newRecStore(keep bool) *recStore {
	return &recStore{keep: keep, open: map[int64][]demo.Result{}, done: map[int64]bool{}}
}

// recSink is one subtask's sink into the store; handles are the store's.
type recSink struct{ store *recStore }

func (s *recSink) Open(context.Context, *weir.RuntimeContext, []int64) error { return nil }

func (s *recSink) Begin(context.Context) (int64, error) {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	st.next++
	st.open[st.next] = nil
	return st.next, nil
}

func (s *recSink) Write(_ context.Context, txn int64, batch []demo.Result) error {
	st := s.store
	if !st.keep {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	rs, ok := st.open[txn]
	if !ok {
		return fmt.Errorf("bench weak sink: write to transaction %d, which is not open", txn)
	}
	st.open[txn] = append(rs, batch...)
	return nil
}

func (s *recSink) PreCommit(context.Context, int64) error { return nil }

func (s *recSink) Commit(_ context.Context, txn int64) error {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done[txn] {
		return nil
	}
	rs, ok := st.open[txn]
	if !ok {
		return fmt.Errorf("bench weak sink: commit of transaction %d, which was never begun or was aborted", txn)
	}
	st.committed = append(st.committed, rs...)
	st.done[txn] = true
	delete(st.open, txn)
	return nil
}

func (s *recSink) Abort(_ context.Context, txn int64) error {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done[txn] {
		return fmt.Errorf("bench weak sink: abort transaction %d: %w", txn, weir.ErrAlreadyCommitted)
	}
	delete(st.open, txn)
	return nil
}

func (s *recSink) Close(context.Context) error { return nil }

// recJob is one run of the recovery job.
type recJob struct {
	env     *weir.Env
	probe   *recProbe
	store   *recStore
	cleanup func()
}

// buildRecJob adds the job to a new environment in mode: events (n, 0:
// unbounded) at rate (0: unthrottled) -> key by account -> aggregate ->
// the store's sink.
func buildRecJob(o weakOptions, mode string, n int64, rate float64, keep bool) (*recJob, error) {
	keys := map[string]string{
		config.ParallelismDefault:  fmt.Sprint(o.parallelism),
		config.RestartStrategyType: config.RestartFixed,
		config.FixedDelayAttempts:  "1000000",
		config.FixedDelayDelay:     fmt.Sprintf("%dms", o.restartDelay.Milliseconds()),
	}
	if o.logRecords > 0 {
		keys[config.WeakInFlightLogMaxRecords] = fmt.Sprint(o.logRecords)
	}
	if o.noLogStore {
		keys[config.WeakInFlightLogSnapshot] = "false"
	}
	env, cleanup, err := newWeakEnv(mode, o.interval, keys)
	if err != nil {
		return nil, err
	}
	j := &recJob{env: env, probe: newRecProbe(o.parallelism, o.keys), store: newRecStore(keep), cleanup: cleanup}
	k := o.keys
	// As demo.Events: every account belongs to one source subtask, so its
	// events reach the aggregate in index order and the output is
	// demo.Expected's.
	owner := func(i int64, p int) int { return int(demo.Account(i, k) % int64(p)) }
	gen := datagen.New(demo.Generator(k), datagen.WithCount(n), datagen.WithOwner(owner), datagen.WithOwnerPeriod(k))
	clock := latencyClock{base: time.Now()}
	events := weir.FromSource(env, func() weir.Source[stampedEvent] { return &stampedSource{inner: gen(), clock: clock, rate: rate} }).
		Name("events").UID("events")
	keyed := weir.KeyBy(events, func(e stampedEvent) int64 { return e.Account })
	probe, store := j.probe, j.store
	results := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, stampedEvent, demo.Result] { return &recAggregate{probe: probe} }).
		Name("aggregate").UID("aggregate")
	weir.SinkToTransactional(results, func() weir.TwoPhaseCommitSink[demo.Result, int64] { return &recSink{store: store} }).
		Name("sink").UID("sink")
	return j, nil
}

// recFailureTimes are the planned failures' offsets from the job's start:
// the first once a snapshot or two completed, the last before the end,
// evenly between.
func recFailureTimes(o weakOptions) []time.Duration {
	if o.failures == 0 {
		return nil
	}
	first := max(o.duration/5, 2*o.interval)
	last := max(first, o.duration-o.duration/10)
	out := make([]time.Duration, o.failures)
	for i := range out {
		out[i] = first
		if o.failures > 1 {
			out[i] = first + time.Duration(int64(last-first)*int64(i)/int64(o.failures-1))
		}
	}
	return out
}

// runWeakRecovery runs the recovery job in one mode.
func runWeakRecovery(o weakOptions, mode string) (weakChild, error) {
	r := weakChild{Section: sectionRecovery, Mode: mode}
	n := int64(o.recoveryRate * o.duration.Seconds())
	j, err := buildRecJob(o, mode, n, o.recoveryRate, true)
	if err != nil {
		return r, err
	}
	defer j.cleanup()
	status := hooks.Plan(j.env).Status
	coll := collectCheckpoints(status)
	smp := startSampler(j.probe.processed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	go func() {
		// Arm the failures at their times, subtask i%p for failure i.
		for i, at := range recFailureTimes(o) {
			select {
			case <-time.After(time.Until(t0.Add(at))):
			case <-ctx.Done():
				return
			}
			j.probe.armed.Store(int32(i%o.parallelism + 1))
		}
	}()
	err = j.env.Execute(ctx, "bench-weak-recovery")
	r.RunSeconds = time.Since(t0).Seconds()
	cancel()
	smp.finish()
	cps := coll.finish()
	if err != nil {
		return r, fmt.Errorf("recovery, mode %s: %w", mode, err)
	}
	fillCheckpoints(&r, cps, status, mode)
	summarizeRecovery(&r, o, j.probe.failures(), smp)
	verifyRecovery(&r, o.keys, n, j.store)
	return r, nil
}

// summarizeRecovery fills the per-failure figures.
func summarizeRecovery(r *weakChild, o weakOptions, fails []recFailure, smp *progressSampler) {
	r.FailuresFired = len(fails)
	var during, before int64
	var duringSecs, beforeSecs float64
	var prevEnd time.Duration
	for _, f := range fails {
		if f.resumed.IsZero() {
			continue
		}
		rec := f.resumed.Sub(f.at)
		r.RecoveryMs = append(r.RecoveryMs, ms(rec))
		var others []int
		for s := range o.parallelism {
			if s != f.subtask {
				others = append(others, s)
			}
		}
		at := smp.since(f.at)
		end := at + max(rec, weakRecoveryMinSpan)
		bw := min(time.Second, at-prevEnd)
		prevEnd = end
		if bw < 50*time.Millisecond {
			continue // no clean second before: the previous recovery
		}
		during += smp.delta(at, end, others)
		duringSecs += (end - at).Seconds()
		before += smp.delta(at-bw, at, others)
		beforeSecs += bw.Seconds()
	}
	if len(r.RecoveryMs) > 0 {
		s := slices.Clone(r.RecoveryMs)
		slices.Sort(s)
		r.RecoveryP50Ms, r.RecoveryMaxMs = s[(len(s)-1)/2], s[len(s)-1]
	}
	if duringSecs > 0 && beforeSecs > 0 {
		r.OthersDuringPerSec, r.OthersBeforePerSec = float64(during)/duringSecs, float64(before)/beforeSecs
		if r.OthersBeforePerSec > 0 {
			r.OthersRatio = r.OthersDuringPerSec / r.OthersBeforePerSec
		}
	}
}

// verifyRecovery compares the committed lines with demo.Expected(n, k),
// as multisets: a line is determined by its event's index, so a line is
// expected if it equals its index's expected line, missing if no
// committed line does, duplicated for every further copy, and wrong if it
// is not its index's expected line (state that diverged).
func verifyRecovery(r *weakChild, k, n int64, st *recStore) {
	count := make(map[int64]int64, k)
	total := make(map[int64]int64, k)
	wantCount, wantTotal := make([]int64, n), make([]int64, n)
	for i := range n {
		a := demo.Account(i, k)
		count[a]++
		total[a] += demo.Amount(i)
		wantCount[i], wantTotal[i] = count[a], total[a]
	}
	seen := make([]uint32, n)
	st.mu.Lock()
	committed := st.committed
	st.mu.Unlock()
	r.ExpectedLines, r.CommittedLines = n, int64(len(committed))
	for _, c := range committed {
		if c.I < 0 || c.I >= n || c.Account != demo.Account(c.I, k) || c.Count != wantCount[c.I] || c.Total != wantTotal[c.I] {
			r.WrongLines++
			continue
		}
		if seen[c.I]++; seen[c.I] > 1 {
			r.DuplicatedLines++
		}
	}
	for _, s := range seen {
		if s == 0 {
			r.MissingLines++
		}
	}
}

// runWeakCost runs the job unthrottled and unbounded for duration in one
// mode, without failures, and measures the aggregate's records/s after a
// warm-up.
func runWeakCost(o weakOptions, mode string) (weakChild, error) {
	r := weakChild{Section: sectionCost, Mode: mode}
	j, err := buildRecJob(o, mode, 0, 0, false)
	if err != nil {
		return r, err
	}
	defer j.cleanup()
	status := hooks.Plan(j.env).Status
	coll := collectCheckpoints(status)
	smp := startSampler(j.probe.processed)
	warm := min(time.Second, o.duration/4)
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	// CPU time over the measured window only, as the records/s.
	var cpu0 time.Duration
	warmDone := make(chan struct{})
	go func() {
		defer close(warmDone)
		select {
		case <-time.After(warm):
			cpu0 = processCPU()
		case <-ctx.Done():
		}
	}()
	t0 := time.Now()
	err = j.env.Execute(ctx, "bench-weak-cost")
	cpu1 := processCPU()
	r.RunSeconds = time.Since(t0).Seconds()
	<-warmDone
	smp.finish()
	cps := coll.finish()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return r, fmt.Errorf("cost, mode %s: %w", mode, err)
	}
	fillCheckpoints(&r, cps, status, mode)
	all := make([]int, o.parallelism)
	for i := range all {
		all[i] = i
	}
	from, to := smp.since(t0)+warm, smp.since(t0)+o.duration
	n := smp.delta(from, to, all)
	if n <= 0 {
		return r, fmt.Errorf("cost, mode %s: no record processed in the measured window", mode)
	}
	r.RecordsPerSec = float64(n) / (to - from).Seconds()
	if cpu0 > 0 {
		r.CPUNsPerRecord = float64((cpu1 - cpu0).Nanoseconds()) / float64(n)
	}
	return r, nil
}
