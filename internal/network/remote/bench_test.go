package remote

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/network"
)

// BenchmarkRemoteChannel moves b.N int64 records (1024 per batch) through
// one remote channel pair on loopback TCP, encoded by the producer and
// decoded by the consumer, and through one local channel in the same run,
// decoding nothing. It reports records/s and encoded bytes/s for both.
func BenchmarkRemoteChannel(b *testing.B) {
	const credits, batch = 4, 1024
	ctx := context.Background()

	local := func(n int) time.Duration {
		g := network.NewGate(1, credits)
		w := network.NewWriter([]*network.Channel{g.Channel(0)}, network.Forward[int64](), network.NewPool[int64](batch), 0)
		start := time.Now()
		go func() { _ = produce(ctx, w, n) }()
		var sum int64
		for done := false; !done; {
			<-g.Ready()
			for _, buf, ok := g.Poll(); ok; _, buf, ok = g.Poll() {
				if buf.Kind == network.EndOfPartition {
					done = true
					continue
				}
				bt := buf.Data.(*network.Batch[int64])
				for _, r := range bt.Records {
					sum += r
				}
				bt.Recycle()
			}
		}
		return time.Since(start)
	}

	x, y := newTM(b, "tm-a"), newTM(b, "tm-b")
	_, cb := connect(b, x, y)
	g := network.NewGate(1, credits)
	if _, err := cb.OpenInput(InputConfig{Key: key(0, 0), Gate: g, Channel: 0}); err != nil {
		b.Fatal(err)
	}
	o := outChannel(b, x, 0, 0, credits)
	w := network.NewWriter([]*OutChannel{o}, network.Forward[int64](), network.NewPool[int64](batch), 0)

	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	go func() { _ = produce(ctx, w, b.N) }()
	vals := make([]int64, 0, batch)
	var sum int64
	for done := false; !done; {
		<-g.Ready()
		for _, buf, ok := g.Poll(); ok; _, buf, ok = g.Poll() {
			if buf.Kind == network.EndOfPartition {
				done = true
				continue
			}
			s := buf.Data.(*network.Serialized)
			vals, _ = decodeInt64s(vals[:0], s.Bytes)
			for _, r := range vals {
				sum += r
			}
			s.Release()
		}
	}
	remote := time.Since(start)
	b.StopTimer()
	bytes := float64(o.Stats().SentBytes)
	loc := local(b.N)
	b.ReportMetric(float64(b.N)/remote.Seconds(), "remote-rec/s")
	b.ReportMetric(bytes/remote.Seconds()/(1<<20), "remote-MiB/s")
	b.ReportMetric(float64(b.N)/loc.Seconds(), "local-rec/s")
	b.ReportMetric(remote.Seconds()/loc.Seconds(), "x-local")
}
