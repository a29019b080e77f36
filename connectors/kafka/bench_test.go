package kafka

import (
	"context"
	"strconv"
	"testing"

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
// Kafka through kfake over 1,000,000 records on 4 partitions at parallelism
// 2, with the exactly-once and the at-least-once sink, checkpoints every
// 100 ms, and reports records per second of the whole job.
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
				src := weir.FromSource(env, Source(br.addrs, in, parse, Bounded())).UID("in")
				sums := weir.Reduce(weir.KeyBy(src, func(s sum) int64 { return s.Key }), func(a, v sum) sum {
					return sum{Key: a.Key, Total: a.Total + v.Total}
				}).UID("sum")
				ser := func(s sum, r *kgo.Record) { s.serialize(r) }
				if mode == "exactly-once" {
					weir.SinkToTransactional(sums, ExactlyOnce(br.addrs, out, ser, TransactionalIDPrefix(out))).UID("out")
				} else {
					weir.SinkTo(sums, AtLeastOnce(br.addrs, out, ser)).UID("out")
				}
				if err := env.Execute(context.Background(), "bench"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
