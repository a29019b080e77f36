package bench

// The latency bench's job: the demo's keyed computation (datagen events ->
// key by account -> count and total per account in a ValueState) with a
// creation time carried by every record, ending in a two-phase-commit sink
// that measures when each record arrives and when its transaction commits.

import (
	"context"
	"sync"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// latencyClock is the run's time reference: nanoseconds since base on Go's
// monotonic clock. Source and sink run in one process, so both read the
// same clock; no wall-clock step can enter a latency.
type latencyClock struct{ base time.Time }

func (c latencyClock) now() int64 { return int64(time.Since(c.base)) }

// stampedEvent is demo.Event with its creation time (latencyClock).
type stampedEvent struct {
	demo.Event
	Created int64
}

// stampedResult is demo.Result with the creation time of its event.
type stampedResult struct {
	demo.Result
	Created int64
}

// stampedSource is the demo's datagen source, paced, stamping each
// record's creation time as its Read returns it: one clock read per Read
// (up to a batch of records, generated within microseconds), not one per
// record, which at the demo's rates would cost a good part of a core.
//
// It paces the unthrottled datagen source itself, in chunks of at least
// paceChunk of its share of the rate, instead of using datagen.WithRate:
// that one sleeps one record's interval when it is ahead, which Go turns
// into "until this P next schedules", so at millions of records per
// second a throttled source spun through the task loop a record or two
// per Read (11 % of the process's CPU in time.Now alone, measured),
// taking the CPU the measured pipeline needs. Creation times are exact
// either way: a record is stamped when it is emitted.
type stampedSource struct {
	inner   weir.Source[demo.Event]
	clock   latencyClock
	rate    float64 // records/s over all subtasks; 0: unthrottled
	scratch []demo.Event

	perNs   float64 // this subtask's records per nanosecond
	chunk   int64   // the fewest records a paced Read emits
	start   int64   // clock at the first Read
	emitted int64
}

// paceChunk is the span of records a paced Read waits for: a sleep is
// never shorter, so a source Reads at most every 100 µs.
const paceChunk = 100 * time.Microsecond

func (s *stampedSource) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	if s.rate > 0 {
		s.perNs = s.rate / float64(rc.Parallelism()) / 1e9
		s.chunk = max(1, int64(s.perNs*float64(paceChunk)))
	}
	s.start, s.emitted = -1, 0
	return s.inner.Open(ctx, rc)
}

func (s *stampedSource) Read(ctx context.Context, dst []stampedEvent, max int) ([]stampedEvent, error) {
	if s.perNs > 0 {
		now := s.clock.now()
		if s.start < 0 {
			s.start = now
		}
		due := int64(float64(now-s.start)*s.perNs) - s.emitted
		if due < s.chunk {
			// Wait for the chunk's last record, but never long: the task
			// takes checkpoint triggers and cancellation between Reads.
			wait := time.Duration(float64(s.chunk-due) / s.perNs)
			time.Sleep(min(wait, 10*time.Millisecond))
			return dst, nil
		}
		max = int(min(int64(max), due))
	}
	var err error
	s.scratch, err = s.inner.Read(ctx, s.scratch[:0], max)
	if len(s.scratch) == 0 {
		return dst, err
	}
	now := s.clock.now()
	for _, e := range s.scratch {
		dst = append(dst, stampedEvent{Event: e, Created: now})
	}
	s.emitted += int64(len(s.scratch))
	return dst, err
}

func (s *stampedSource) SnapshotState(id int64) error    { return s.inner.SnapshotState(id) }
func (s *stampedSource) Close(ctx context.Context) error { return s.inner.Close(ctx) }

// latencyTotals is the per-account state, as the demo's.
type latencyTotals struct{ Count, Total int64 }

// stampedAggregate is demo.AggregateEvents' function carrying the
// creation time through.
type stampedAggregate struct {
	state weir.ValueState[latencyTotals]
}

func (a *stampedAggregate) Open(ctx context.Context, kc *weir.KeyedContext[int64]) (err error) {
	a.state, err = weir.GetValueState[latencyTotals](kc, "totals")
	return err
}

func (a *stampedAggregate) ProcessElement(e stampedEvent, _ *weir.KeyedContext[int64], out *weir.Collector[stampedResult]) error {
	t, _ := a.state.Value()
	t.Count++
	t.Total += e.Amount
	a.state.Update(t)
	out.Collect(stampedResult{Result: demo.Result{I: e.I, Account: e.Account, Count: t.Count, Total: t.Total}, Created: e.Created})
	return nil
}

// latencyJobOptions are one run's job parameters.
type latencyJobOptions struct {
	keys int64
	rate float64 // events per second over all source subtasks; 0: unthrottled
}

// buildLatencyJob adds the job to env; its sinks report to rec.
func buildLatencyJob(env *weir.Env, o latencyJobOptions, rec *latencyRecorder) {
	k := o.keys
	// As demo.Events: every account belongs to one source subtask.
	owner := func(i int64, p int) int { return int(demo.Account(i, k) % int64(p)) }
	gen := datagen.New(demo.Generator(k), datagen.WithOwner(owner), datagen.WithOwnerPeriod(k))
	clock, rate := rec.clock, o.rate
	events := weir.FromSource(env, func() weir.Source[stampedEvent] { return &stampedSource{inner: gen(), clock: clock, rate: rate} }).
		Name("events").UID("events")
	keyed := weir.KeyBy(events, func(e stampedEvent) int64 { return e.Account })
	results := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, stampedEvent, stampedResult] { return &stampedAggregate{} }).
		Name("aggregate").UID("aggregate")
	weir.SinkToTransactional(results, rec.newSink).Name("latency").UID("latency")
}

// latencyRecorder collects what the run's sink subtasks measured. Records
// created in [from, to) (latencyClock) are measured; the others (the
// warm-up, and the tail after the window in which late records still
// arrive and commit) are only counted.
type latencyRecorder struct {
	clock    latencyClock
	from, to int64

	mu    sync.Mutex
	sinks []*latencySink
}

func (r *latencyRecorder) newSink() weir.TwoPhaseCommitSink[stampedResult, int64] {
	s := &latencySink{rec: r, txns: map[int64]*txnTimes{}}
	r.mu.Lock()
	r.sinks = append(r.sinks, s)
	r.mu.Unlock()
	return s
}

// latencyTotalsOf merges the sinks' figures. Call it after the job ended:
// the sinks' fields are their task goroutines' until then.
func (r *latencyRecorder) totals() (arrival, commit *latencyHist, all, aborted int64) {
	arrival, commit = new(latencyHist), new(latencyHist)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sinks {
		arrival.merge(&s.arrival)
		commit.merge(&s.commit)
		all += s.all
		aborted += s.aborted
	}
	return arrival, commit, all, aborted
}

// latencySink is a TwoPhaseCommitSink whose transactions hold nothing but
// the creation times of their measured records: Write records each
// record's arrival (the batch's arrival time minus its creation), Commit
// each record's commit time minus its creation. Handles are sequence
// numbers; the bench never restores, so the transactions live in memory.
type latencySink struct {
	rec     *latencyRecorder
	arrival latencyHist
	commit  latencyHist
	all     int64 // records written, measured or not
	aborted int64 // measured records whose transaction was aborted
	next    int64
	txns    map[int64]*txnTimes // open and pre-committed
	free    []*txnTimes
}

func (s *latencySink) Open(context.Context, *weir.RuntimeContext, []int64) error { return nil }

func (s *latencySink) Begin(context.Context) (int64, error) {
	s.next++
	var t *txnTimes
	if n := len(s.free); n > 0 {
		t, s.free = s.free[n-1], s.free[:n-1]
	} else {
		t = &txnTimes{times: make([]int64, 0, txnSamples)}
	}
	t.reset()
	s.txns[s.next] = t
	return s.next, nil
}

func (s *latencySink) Write(_ context.Context, txn int64, batch []stampedResult) error {
	t := s.txns[txn]
	now := s.rec.clock.now() // one read per batch: its records arrived together
	from, to := s.rec.from, s.rec.to
	s.all += int64(len(batch))
	for i := range batch {
		if c := batch[i].Created; c >= from && c < to {
			s.arrival.record(now - c)
			t.add(c)
		}
	}
	return nil
}

func (s *latencySink) PreCommit(context.Context, int64) error { return nil }

func (s *latencySink) Commit(_ context.Context, txn int64) error {
	t, ok := s.txns[txn]
	if !ok {
		return nil // committed already
	}
	now := s.rec.clock.now()
	for j, c := range t.times {
		s.commit.recordN(now-c, t.weight(j))
	}
	s.release(txn, t)
	return nil
}

func (s *latencySink) Abort(_ context.Context, txn int64) error {
	if t, ok := s.txns[txn]; ok {
		s.aborted += int64(t.seen)
		s.release(txn, t)
	}
	return nil
}

func (s *latencySink) release(txn int64, t *txnTimes) {
	delete(s.txns, txn)
	s.free = append(s.free, t)
}

func (s *latencySink) Close(context.Context) error { return nil }

// txnSamples bounds the creation times one transaction keeps.
const txnSamples = 1 << 16

// txnTimes is a transaction's creation times, bounded: while it holds
// fewer than txnSamples it keeps every one; when full it keeps every other
// one and from then on every second record, and so on, doubling stride.
// Records reach the sink in about creation order, so that is an even
// sample of the transaction's records, each kept time standing for stride
// of them (the last one: those after it). At 1 s checkpoints and millions
// of records per second a transaction keeps 2^15 to 2^16 times: its
// commit latencies, spread over about a second, lose far less than the
// histogram's 0.8 % to the sampling.
type txnTimes struct {
	times  []int64
	stride uint64
	seen   uint64
}

// weight is how many records kept time j stands for: stride, but the
// last one only the records after it, so that the weights add up to seen.
func (t *txnTimes) weight(j int) uint64 {
	if j == len(t.times)-1 {
		return t.seen - uint64(j)*t.stride
	}
	return t.stride
}

func (t *txnTimes) reset() { t.times, t.stride, t.seen = t.times[:0], 1, 0 }

func (t *txnTimes) add(c int64) {
	if t.seen%t.stride == 0 {
		if len(t.times) == cap(t.times) {
			for i := 0; 2*i < len(t.times); i++ {
				t.times[i] = t.times[2*i]
			}
			t.times = t.times[:(len(t.times)+1)/2]
			t.stride *= 2
		}
		if t.seen%t.stride == 0 {
			t.times = append(t.times, c)
		}
	}
	t.seen++
}
