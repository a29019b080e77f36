package demo_test

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// BenchmarkKeyedSumTaskManagers measures the demo's keyed count+sum at
// parallelism 2 in local mode with one TaskManager (every channel in
// process) and with two (subtask i on TaskManager i mod 2: half of the
// keyed exchange's records cross loopback TCP, encoded and decoded),
// alternating the two in every iteration so that both see the same
// machine. It reports the median records/s of each, their ratio and the
// remote bytes/s of the two-TaskManager runs.
//
//	go test -run XXX -bench KeyedSumTaskManagers -benchtime 5x ./internal/jobs/demo/
func BenchmarkKeyedSumTaskManagers(b *testing.B) {
	const n, k, p = 2_000_000, 10_000, 2
	var one, two, remote []float64
	for range b.N {
		for _, tms := range []int{1, 2} {
			rate, bytes := runKeyedSum(b, n, k, p, tms)
			if tms == 1 {
				one = append(one, rate)
			} else {
				two = append(two, rate)
				remote = append(remote, bytes)
			}
		}
	}
	m1, m2 := median(one), median(two)
	b.ReportMetric(m1, "rec/s-1tm")
	b.ReportMetric(m2, "rec/s-2tm")
	b.ReportMetric(m2/m1, "ratio-2tm/1tm")
	b.ReportMetric(median(remote)/1e6, "remoteMB/s-2tm")
	b.ReportMetric(0, "ns/op")
}

// runKeyedSum runs the job once and returns its records/s and the bytes/s
// that crossed TCP.
func runKeyedSum(b *testing.B, n, k int64, p, tms int) (float64, float64) {
	b.Helper()
	cfg := weir.NewConfig()
	for key, v := range map[string]string{
		config.ParallelismDefault:    fmt.Sprint(p),
		config.CheckpointingInterval: "1s",
		config.CheckpointsDir:        b.TempDir(),
		config.LocalTaskManagers:     fmt.Sprint(tms),
	} {
		if err := cfg.Set(key, v); err != nil {
			b.Fatal(err)
		}
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	var seen atomic.Int64
	weir.SinkTo(demo.Aggregate(env, demo.Options{Events: n, Keys: k}), func() weir.Sink[demo.Result] { return &counting{seen: &seen} }).Name("discard").UID("discard")
	start := time.Now()
	if err := env.Execute(context.Background(), "keyed-sum"); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start).Seconds()
	if got := seen.Load(); got != n {
		b.Fatalf("%d results for %d events", got, n)
	}
	return float64(n) / el, float64(hooks.Plan(env).Status.RemoteBytesSent.Load()) / el
}

// counting discards results, counting them once per batch.
type counting struct{ seen *atomic.Int64 }

func (s *counting) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (s *counting) Write(_ context.Context, b []demo.Result) error {
	s.seen.Add(int64(len(b)))
	return nil
}
func (s *counting) Flush(context.Context) error { return nil }
func (s *counting) Close(context.Context) error { return nil }

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
