package kafka

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
)

// fillPartitions writes n records "ts" to each partition, partition p's
// times starting at starts[p] and rising by 10 ms.
func fillPartitions(t *testing.T, b *broker, topic string, n int, starts []int64) {
	t.Helper()
	cl := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	ctx := context.Background()
	for p, start := range starts {
		for i := range n {
			cl.Produce(ctx, &kgo.Record{Partition: int32(p), Value: []byte(strconv.FormatInt(start+int64(i)*10, 10))}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

type lineCount struct{ n *atomic.Int64 }

func (c lineCount) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (c lineCount) Write(_ context.Context, b []int64) error {
	c.n.Add(int64(len(b)))
	return nil
}
func (c lineCount) Flush(context.Context) error { return nil }
func (c lineCount) Close(context.Context) error { return nil }

// TestPerPartitionWatermarks: with FromSourceWithWatermarks the Kafka
// source generates watermarks per partition, so a partition whose times
// lag far behind another's holds event time back and none of its records
// is late; with one watermark for the whole subtask (timestamps assigned
// after the source) many are.
func TestPerPartitionWatermarks(t *testing.T) {
	b := newBroker(t)
	topic := b.topic(t, 2)
	const n = 400
	fillPartitions(t, b, topic, n, []int64{1_000_000, 0})
	parse := func(r *kgo.Record) (int64, error) { return strconv.ParseInt(string(r.Value), 10, 64) }
	for _, perSplit := range []bool{true, false} {
		t.Run(map[bool]string{true: "per partition", false: "per subtask"}[perSplit], func(t *testing.T) {
			j := newJob(t, 1)
			j.restartNone = true
			j.extra = map[string]string{"pipeline.auto-watermark-interval": "0"}
			late, windowed := &atomic.Int64{}, &atomic.Int64{}
			o := j.run(t, func(env *weir.Env) {
				src := Source(b.addrs, topic, parse, WithBounded(), WithStartOffset(Earliest()))
				ws := weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v int64, _ int64) int64 { return v })
				var s weir.Stream[int64]
				if perSplit {
					s = weir.FromSourceWithWatermarks(env, src, ws)
				} else {
					s = weir.AssignTimestampsAndWatermarks(weir.FromSource(env, src), ws)
				}
				tag := weir.NewOutputTag[int64]("late")
				w := weir.Window(weir.KeyBy(s, func(int64) int64 { return 0 }), weir.TumblingEventTimeWindows(time.Second)).SideOutputLateData(tag)
				counts := weir.AggregateWindow(w, weir.AggregateFunction[int64, int64, int64](countOf{}))
				weir.SinkTo(weir.SideOutput(counts, tag), func() weir.Sink[int64] { return lineCount{late} })
				weir.SinkTo(weir.FlatMap(counts, func(c int64, out *weir.Collector[int64]) error {
					for range c {
						out.Collect(c)
					}
					return nil
				}), func() weir.Sink[int64] { return lineCount{windowed} })
			})
			if o.err != nil {
				t.Fatalf("%v\n%s", o.err, o.log)
			}
			if got := late.Load() + windowed.Load(); got != 2*n {
				t.Fatalf("%d records counted in windows and %d late: want %d in all", windowed.Load(), late.Load(), 2*n)
			}
			if perSplit && late.Load() != 0 {
				t.Fatalf("%d records late with per-partition watermarks", late.Load())
			}
			if !perSplit && late.Load() == 0 {
				t.Fatalf("no record late with one watermark for both partitions: the test does not show what per-partition watermarks prevent")
			}
		})
	}
}

type countOf struct{}

func (countOf) CreateAccumulator() int64   { return 0 }
func (countOf) Add(_ int64, a int64) int64 { return a + 1 }
func (countOf) Result(a int64) int64       { return a }
func (countOf) Merge(a, b int64) int64     { return a + b }
