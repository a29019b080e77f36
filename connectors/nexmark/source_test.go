package nexmark

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
)

// count is a sink that only counts.
type count struct{ n *atomic.Int64 }

func (c count) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (c count) Write(_ context.Context, b []Event) error {
	c.n.Add(int64(len(b)))
	return nil
}
func (c count) Flush(context.Context) error { return nil }
func (c count) Close(context.Context) error { return nil }

func runSource(tb testing.TB, events int64) int64 {
	cfg := weir.NewConfig()
	for k, v := range map[string]string{config.ParallelismDefault: "1", config.CheckpointsDir: tb.TempDir()} {
		if err := cfg.Set(k, v); err != nil {
			tb.Fatal(err)
		}
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	var n atomic.Int64
	weir.SinkTo(Events(env, DefaultConfig(), events, 0), func() weir.Sink[Event] { return count{&n} }).UID("count")
	if err := env.Execute(context.Background(), "nexmark-source"); err != nil {
		tb.Fatal(err)
	}
	return n.Load()
}

func TestSource(t *testing.T) {
	if n := runSource(t, 10_000); n != 10_000 {
		t.Fatalf("%d events, want 10000", n)
	}
}

// BenchmarkSource is the generator as a job's source (with its watermarks)
// feeding a counting sink: per event, so allocs/op is the job's setup
// amortized over b.N events, and cpu-ns/op all the job's goroutines'
// CPU time per event.
func BenchmarkSource(b *testing.B) {
	b.ReportAllocs()
	cpu := startCPU()
	if n := runSource(b, int64(b.N)); n != int64(b.N) {
		b.Fatalf("%d events, want %d", n, b.N)
	}
	cpu.report(b)
}
