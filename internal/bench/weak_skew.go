package bench

// bench weak's skew section: bench skew's job (Union(A, B) -> keyed
// count, B's barrier arriving late behind its backlog) with A paced at
// --skew-rate (500 000 records/s by default; 0 unthrottles it), its
// records carrying the time they were due.

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
)

// skewRecord is a record of the skew job: Created is its source's clock
// reading (latencyClock) for A's records, -1 for B's.
type skewRecord struct {
	Key, Seq, Created int64
}

// skewSampleEvery: the count measures the latency of A's records whose
// Seq is a multiple of it (a clock read per record would be a good part
// of the count's cost at millions of records per second).
const skewSampleEvery = 16

// skewSource emits keys 0..keys-1 for duration at rate (0: as fast as the
// job takes them). With stamp it stamps each record with the time it was
// due: start + seq/rate when paced, so that the time the job held the
// source back counts in the latency (no coordinated omission); the time
// of its Read when unthrottled (then a latency is only the queues').
type skewSource struct {
	clock    latencyClock
	stamp    bool
	rate     float64
	keys     int64
	duration time.Duration

	start      time.Time
	startClock int64
	seq        int64
}

func (s *skewSource) Open(context.Context, *weir.RuntimeContext) error { return nil }

func (s *skewSource) Read(ctx context.Context, dst []skewRecord, max int) ([]skewRecord, error) {
	now := time.Now()
	if s.start.IsZero() {
		s.start, s.startClock = now, s.clock.now()
	}
	if now.Sub(s.start) >= s.duration {
		return dst, io.EOF
	}
	n := max
	if s.rate > 0 {
		due := int64(now.Sub(s.start).Seconds()*s.rate) - s.seq
		if due <= 0 {
			time.Sleep(time.Duration(float64(time.Second) / s.rate))
			return dst, nil
		}
		n = int(min(int64(max), due))
	}
	created := int64(-1)
	if s.stamp && s.rate == 0 {
		created = s.clock.now()
	}
	for range n {
		if s.stamp && s.rate > 0 {
			created = s.startClock + int64(float64(s.seq)*1e9/s.rate)
		}
		dst = append(dst, skewRecord{Key: s.seq % s.keys, Seq: s.seq, Created: created})
		s.seq++
	}
	return dst, nil
}

func (s *skewSource) SnapshotState(int64) error   { return nil }
func (s *skewSource) Close(context.Context) error { return nil }

// skewCount counts per key and records the latency of sampled A records
// into the job's one histogram (the count runs at p=1); processed counts
// A's records only (B's throttled trickle goes on during alignment).
type skewCount struct {
	clock     latencyClock
	hist      *latencyHist
	processed *atomic.Int64
	count     weir.ValueState[int64]
}

func (k *skewCount) Open(ctx context.Context, kc *weir.KeyedContext[int64]) (err error) {
	k.count, err = weir.GetValueState[int64](kc, "count")
	return err
}

func (k *skewCount) ProcessElement(r skewRecord, _ *weir.KeyedContext[int64], _ *weir.Collector[skewRecord]) error {
	if r.Created >= 0 {
		if r.Seq%skewSampleEvery == 0 {
			k.hist.record(k.clock.now() - r.Created)
		}
		k.processed.Add(1)
	}
	c, _ := k.count.Value()
	k.count.Update(c + 1)
	return nil
}

// runWeakSkew runs the skew job in one mode.
func runWeakSkew(o weakOptions, mode string) (weakChild, error) {
	r := weakChild{Section: sectionSkew, Mode: mode}
	env, cleanup, err := newWeakEnv(mode, o.interval, map[string]string{
		config.ParallelismDefault:       "1",
		config.BatchSize:                fmt.Sprint(skewBatch),
		config.NetworkCreditsPerChannel: fmt.Sprint(skewCredits(o.delay)),
	})
	if err != nil {
		return r, err
	}
	defer cleanup()
	clock := latencyClock{base: time.Now()}
	hist := new(latencyHist)
	var processed atomic.Int64
	a := weir.FromSource(env, func() weir.Source[skewRecord] {
		return &skewSource{clock: clock, stamp: true, rate: o.rate, keys: 1000, duration: o.duration}
	}).Name("A").UID("A")
	b := weir.FromSource(env, func() weir.Source[skewRecord] {
		return &skewSource{keys: 1000, duration: o.duration}
	}).Name("B").UID("B")
	// As bench skew: the rebalance keeps the throttle out of B's task, so
	// B's records queue in the throttle's input gate.
	p := &pacer{rate: skewBatch / skewStep.Seconds(), slack: skewBatch}
	slowB := weir.Map(weir.Rebalance(b).Name("B-rebalance").UID("B-rebalance"), func(r skewRecord) skewRecord {
		p.tick()
		return r
	}).Name("B-throttle").UID("B-throttle")
	u := weir.Union(a, slowB).Name("union").UID("union")
	counts := weir.Process(weir.KeyBy(u, func(r skewRecord) int64 { return r.Key }), func() weir.KeyedProcessFunction[int64, skewRecord, skewRecord] {
		return &skewCount{clock: clock, hist: hist, processed: &processed}
	}).Name("count").UID("count")
	weir.SinkTo(counts, func() weir.Sink[skewRecord] { return discard[skewRecord]{} }).Name("discard").UID("discard")

	status := hooks.Plan(env).Status
	coll := collectCheckpoints(status)
	smp := startSampler([]*atomic.Int64{&processed})
	t0 := time.Now()
	err = env.Execute(context.Background(), "bench-weak-skew")
	r.RunSeconds = time.Since(t0).Seconds()
	smp.finish()
	cps := coll.finish()
	if err != nil {
		return r, fmt.Errorf("skew, mode %s: %w", mode, err)
	}
	fillCheckpoints(&r, cps, status, mode)
	// The first second is the sources' start; after duration they end.
	from, to := min(time.Second, o.duration/4), smp.since(t0)+o.duration
	if d := to - from; d > 0 {
		r.RecordsPerSec = float64(smp.delta(from, to, []int{0})) / d.Seconds()
	}
	r.LongestStallMs = ms(smp.longestStall(0, from, to))
	r.P50Ms, r.P99Ms = hist.quantileMs(0.5), hist.quantileMs(0.99)
	return r, nil
}
