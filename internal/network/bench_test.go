package network

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/keygroup"
)

const benchMaxP = keygroup.DefaultMaxParallelism

// baselineSum is the hand-written loop the pipeline is measured against:
// route each record to its key group's partition and sum it into a slice,
// with no batches, channels or goroutines.
func baselineSum(n int, owner []int32) []int64 {
	sums := make([]int64, 2)
	for i := range n {
		r := int64(i)
		sums[owner[keygroup.Of(keygroup.Uint64(uint64(r)), benchMaxP)]] += r
	}
	return sums
}

// BenchmarkEmitHash measures one record (one op) through Writer.Emit, hash
// partitioning to two channels of a gate, and a consumer goroutine that
// polls, sums and recycles the batches. It reports the same-run baseline
// (baselineSum) beside it and the ratio.
func BenchmarkEmitHash(b *testing.B) {
	for _, batch := range []int{64, 1024} {
		b.Run(map[int]string{64: "batch=64", 1024: "batch=1024"}[batch], func(b *testing.B) {
			benchPipeline(b, batch, false, false)
		})
	}
}

// BenchmarkEmitBatchHash is BenchmarkEmitHash through EmitBatch, 256 records
// per call.
func BenchmarkEmitBatchHash(b *testing.B) { benchPipeline(b, 1024, true, false) }

// BenchmarkEmitTimedHash is BenchmarkEmitHash on a timed writer
// (WithTimestamps) through EmitTimed, batches of 1024: the cost of carrying
// one event timestamp per record. The consumer sums the timestamps too.
func BenchmarkEmitTimedHash(b *testing.B) { benchPipeline(b, 1024, false, true) }

// BenchmarkEmitBatchTimedHash is BenchmarkEmitBatchHash on a timed writer
// through EmitBatchTimed.
func BenchmarkEmitBatchTimedHash(b *testing.B) { benchPipeline(b, 1024, true, true) }

func benchPipeline(b *testing.B, batchSize int, viaBatch, timed bool) {
	ctx := context.Background()
	hash := func(r int64) uint32 { return keygroup.Uint64(uint64(r)) }
	g := NewGate(2, 4)
	var opts []WriterOption
	if timed {
		opts = append(opts, WithTimestamps())
	}
	w := NewWriter([]*Channel{g.Channel(0), g.Channel(1)}, Hash(hash, benchMaxP), NewPool[int64](batchSize), 0, opts...)

	b.StopTimer()
	start := time.Now()
	base := baselineSum(b.N, w.owner)
	baseline := time.Since(start)

	sums := make([]int64, 2)
	var tsum int64 // timed: the sum of every record's timestamp, 2*r
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		eops := 0
		for eops < 2 {
			<-g.Ready()
			for ch, buf, ok := g.Poll(); ok; ch, buf, ok = g.Poll() {
				if buf.Kind == EndOfPartition {
					eops++
					continue
				}
				bt := buf.Data.(*Batch[int64])
				s := sums[ch]
				for _, r := range bt.Records {
					s += r
				}
				sums[ch] = s
				if timed {
					for _, t := range bt.Times {
						tsum += t
					}
				}
				bt.Recycle()
			}
		}
	}()
	recs := make([]int64, 256)
	ts := make([]int64, 256)

	b.ResetTimer()
	b.StartTimer()
	start = time.Now()
	if viaBatch {
		for i := 0; i < b.N; i += len(recs) {
			n := min(len(recs), b.N-i)
			for j := range n {
				recs[j] = int64(i + j)
				ts[j] = 2 * int64(i+j)
			}
			var err error
			if timed {
				err = w.EmitBatchTimed(ctx, recs[:n], ts[:n])
			} else {
				err = w.EmitBatch(ctx, recs[:n])
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	} else if timed {
		for i := range b.N {
			if err := w.EmitTimed(ctx, int64(i), 2*int64(i)); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		for i := range b.N {
			if err := w.Emit(ctx, int64(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Broadcast(ctx, Buffer{Kind: EndOfPartition}); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
	pipeline := time.Since(start)
	b.StopTimer()

	if sums[0] != base[0] || sums[1] != base[1] {
		b.Fatalf("pipeline sums %v, baseline %v", sums, base)
	}
	if timed && tsum != 2*(base[0]+base[1]) {
		b.Fatalf("timestamp sum %d, want %d", tsum, 2*(base[0]+base[1]))
	}
	n := float64(b.N)
	b.ReportMetric(float64(baseline.Nanoseconds())/n, "baseline-ns/rec")
	b.ReportMetric(float64(pipeline.Nanoseconds())/n, "ns/rec")
	if baseline > 0 {
		b.ReportMetric(float64(pipeline)/float64(baseline), "x-baseline")
	}
}

// syncPool is the alternative to Pool's free list that BenchmarkPool
// compares against.
type syncPool[T any] struct {
	p    sync.Pool
	size int
}

func (s *syncPool[T]) get() *Batch[T] {
	if b, ok := s.p.Get().(*Batch[T]); ok {
		return b
	}
	return &Batch[T]{Records: make([]T, 0, s.size)}
}

func (s *syncPool[T]) put(b *Batch[T]) {
	b.Records = b.Records[:0]
	s.p.Put(b)
}

// BenchmarkPool moves batches from a producer goroutine that gets them to a
// consumer goroutine that returns them, the pattern of a network edge.
func BenchmarkPool(b *testing.B) {
	const size = 1024
	run := func(b *testing.B, get func() *Batch[int64], put func(*Batch[int64])) {
		q := make(chan *Batch[int64], 8)
		done := make(chan struct{})
		go func() {
			for bt := range q {
				put(bt)
			}
			close(done)
		}()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			bt := get()
			bt.Records = append(bt.Records, 1)
			q <- bt
		}
		close(q)
		<-done
	}
	b.Run("freelist", func(b *testing.B) {
		p := NewPool[int64](size)
		run(b, p.Get, (*Batch[int64]).Recycle)
	})
	b.Run("syncpool", func(b *testing.B) {
		p := &syncPool[int64]{size: size}
		run(b, p.get, p.put)
	})
}
