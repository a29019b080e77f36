package kafka

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
)

// sum is a running per-key total.
type sum struct {
	Key, Total int64
}

func (s sum) serialize(r *kgo.Record) {
	r.Key = strconv.AppendInt(nil, s.Key, 10)
	r.Value = strconv.AppendInt(nil, s.Total, 10)
}

// BenchmarkKeyedSum runs Kafka → key by (i mod 1000) → running sum →
// Kafka through kfake (or the real brokers in WEIR_KAFKA_BROKERS) over
// 1,000,000 records on 4 partitions at parallelism 2, with the
// exactly-once and the at-least-once sink in the same run, checkpoints
// every 100 ms. It reports records per second of the whole job and the
// p50 and p99 of what each sink spends at a checkpoint, timed around the
// sink's own calls (one sample per subtask and checkpoint):
//
//   - exactly-once: commit-p99-ms is Commit, the EndTxn(commit) sent when
//     the checkpoint completed (notifyCheckpointComplete → commit done);
//     precommit-p99-ms is PreCommit at the barrier, the flush of the
//     transaction's records, which the barrier waits for.
//   - at-least-once: flush-p99-ms is Flush at the barrier, the wait until
//     every record produced since the last checkpoint is acknowledged;
//     there is no commit phase.
func BenchmarkKeyedSum(b *testing.B) {
	const n, keys = 1_000_000, 1000
	br := newBroker(b)
	in := br.topic(b, 4)
	cl := br.client(b, kgo.DefaultProduceTopic(in), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range n {
		cl.Produce(context.Background(), &kgo.Record{Value: strconv.AppendInt(nil, int64(i), 10)}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	parse := func(r *kgo.Record) (sum, error) {
		i, err := strconv.ParseInt(string(r.Value), 10, 64)
		return sum{Key: i % keys, Total: i}, err
	}
	for _, mode := range []string{"exactly-once", "at-least-once"} {
		b.Run(mode, func(b *testing.B) {
			var phases durations // commit, pre-commit, flush samples of every iteration
			for range b.N {
				out := br.topic(b, 4)
				cfg := weir.NewConfig()
				for k, v := range map[string]string{
					config.ParallelismDefault:    "2",
					config.CheckpointsDir:        b.TempDir(),
					config.CheckpointingInterval: "100ms",
				} {
					if err := cfg.Set(k, v); err != nil {
						b.Fatal(err)
					}
				}
				env := weir.NewEnv(weir.WithConfig(cfg))
				src := weir.FromSource(env, Source(br.addrs, in, parse, WithBounded())).UID("in")
				sums := weir.Reduce(weir.KeyBy(src, func(s sum) int64 { return s.Key }), func(a, v sum) sum {
					return sum{Key: a.Key, Total: a.Total + v.Total}
				}).UID("sum")
				ser := func(s sum, r *kgo.Record) error { s.serialize(r); return nil }
				if mode == "exactly-once" {
					eo := ExactlyOnce(br.addrs, out, ser, WithTransactionalIDPrefix(out))
					weir.SinkToTransactional(sums, func() weir.TwoPhaseCommitSink[sum, *Txn] {
						return &timedEO{TwoPhaseCommitSink: eo(), d: &phases}
					}).UID("out")
				} else {
					alo := AtLeastOnce(br.addrs, out, ser)
					weir.SinkTo(sums, func() weir.Sink[sum] { return &timedALO{Sink: alo(), d: &phases} }).UID("out")
				}
				if err := env.Execute(context.Background(), "bench"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			if mode == "exactly-once" {
				phases.report(b, "commit", phases.commit)
				phases.report(b, "precommit", phases.precommit)
			} else {
				phases.report(b, "flush", phases.flush)
			}
		})
	}
}

// durations collects how long the sinks' checkpoint calls took, from
// every subtask's goroutine.
type durations struct {
	mu                       sync.Mutex
	commit, precommit, flush []time.Duration
}

func (d *durations) add(to *[]time.Duration, began time.Time) {
	el := time.Since(began)
	d.mu.Lock()
	*to = append(*to, el)
	d.mu.Unlock()
}

// report adds name-p50-ms and name-p99-ms (nearest rank) and the number
// of samples per iteration; a sink that took no checkpoint fails the
// benchmark, as its figures would be empty.
func (d *durations) report(b *testing.B, name string, samples []time.Duration) {
	if len(samples) == 0 {
		b.Errorf("no %s was timed: the sink took no checkpoint", name)
		return
	}
	s := slices.Sorted(slices.Values(samples))
	rank := func(q float64) float64 {
		i := int(q*float64(len(s))+0.999999) - 1
		return float64(s[max(i, 0)].Microseconds()) / 1000
	}
	b.ReportMetric(rank(0.50), name+"-p50-ms")
	b.ReportMetric(rank(0.99), name+"-p99-ms")
	b.ReportMetric(float64(len(s))/float64(b.N), name+"-samples/op")
}

// timedEO times the exactly-once sink's PreCommit and Commit. It forwards
// TransactionTimeout, which SinkToTransactional looks for on the sink
// (an embedded interface would hide it).
type timedEO struct {
	weir.TwoPhaseCommitSink[sum, *Txn]
	d *durations
}

func (s *timedEO) PreCommit(ctx context.Context, txn *Txn) error {
	defer s.d.add(&s.d.precommit, time.Now())
	return s.TwoPhaseCommitSink.PreCommit(ctx, txn)
}

func (s *timedEO) Commit(ctx context.Context, txn *Txn) error {
	// Empty transactions commit without a request: timing them would
	// pull the percentiles towards zero.
	if txn.Empty {
		return s.TwoPhaseCommitSink.Commit(ctx, txn)
	}
	defer s.d.add(&s.d.commit, time.Now())
	return s.TwoPhaseCommitSink.Commit(ctx, txn)
}

func (s *timedEO) TransactionTimeout() time.Duration {
	return s.TwoPhaseCommitSink.(weir.TransactionTimeouter).TransactionTimeout()
}

// timedALO times the at-least-once sink's Flush at each checkpoint.
type timedALO struct {
	weir.Sink[sum]
	d *durations
}

func (s *timedALO) Flush(ctx context.Context) error {
	defer s.d.add(&s.d.flush, time.Now())
	return s.Sink.Flush(ctx)
}
