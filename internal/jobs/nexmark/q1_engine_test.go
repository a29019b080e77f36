package nexmark_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
	q "github.com/weirstream/weir/internal/jobs/nexmark"
)

// benchEngine runs query on the engine at parallelism 1 over b.N events
// into the discarding sink: allocs/op is allocations per event (the
// job's setup amortized over b.N), cpu-ns/event the process's CPU time
// (user + system, every goroutine) per event.
func benchEngine(b *testing.B, name string) {
	query, err := q.Lookup(name)
	if err != nil {
		b.Fatal(err)
	}
	cfg := weir.NewConfig()
	for k, v := range map[string]string{"parallelism.default": "1", "state.checkpoints.dir": b.TempDir()} {
		if err := cfg.Set(k, v); err != nil {
			b.Fatal(err)
		}
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	p := q.Params{Gen: nexmark.DefaultConfig()}
	if err := query.Build(env, nexmark.Events(env, p.Gen, int64(b.N), 0), p); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	if err := env.Execute(ctx, name); err != nil {
		b.Fatal(err)
	}
	if cpu := processCPU(b) - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu, "events/core-s")
		b.ReportMetric(cpu*1e9/float64(b.N), "cpu-ns/event")
	}
}

func processCPU(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func BenchmarkEngineQ0(b *testing.B)  { benchEngine(b, "q0") }
func BenchmarkEngineQ1(b *testing.B)  { benchEngine(b, "q1") }
func BenchmarkEngineQ2(b *testing.B)  { benchEngine(b, "q2") }
func BenchmarkEngineQ10(b *testing.B) { benchEngine(b, "q10") }
func BenchmarkEngineQ13(b *testing.B) { benchEngine(b, "q13") }
func BenchmarkEngineQ14(b *testing.B) { benchEngine(b, "q14") }
func BenchmarkEngineQ21(b *testing.B) { benchEngine(b, "q21") }
func BenchmarkEngineQ22(b *testing.B) { benchEngine(b, "q22") }
