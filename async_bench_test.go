package weir_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
)

// BenchmarkAsyncMapHTTP measures AsyncMap against an HTTP service that
// answers every request after 50 ms (httptest, loopback), at capacity
// 1000 and parallelism 1: its bound is capacity ÷ latency = 20,000
// records/s. The baselines in the same run: a synchronous weir.Map making
// the same request per record (bound: 1 ÷ latency = 20/s), and AsyncMap
// with a 50 ms timer instead of HTTP (the operator without the cost of
// serving and making 20,000 requests/s on the same 2 cores).
//
//	go test -run '^$' -bench AsyncMapHTTP -benchtime 1x .
func BenchmarkAsyncMapHTTP(b *testing.B) {
	const latency = 50 * time.Millisecond
	const capacity = 1000
	const asyncN, syncN = 60_000, 40
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(latency)
		io.WriteString(w, r.URL.Query().Get("i"))
	}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: capacity, MaxConnsPerHost: 0}}
	get := func(ctx context.Context, i int64) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/?i="+strconv.FormatInt(i, 10), nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	run := func(n int64, build func(weir.Stream[int64]) weir.Stream[string]) float64 {
		env := weir.NewEnv(weir.WithParallelism(1), weir.WithCheckpointDir(filepath.Join(b.TempDir(), "checkpoints")))
		src := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithCount(n)))
		var got atomic.Int64
		weir.SinkTo(build(src), func() weir.Sink[string] { return countSink{&got} })
		start := time.Now()
		if err := env.Execute(b.Context(), "async-bench"); err != nil {
			b.Fatal(err)
		}
		if got.Load() != n {
			b.Fatalf("%d results for %d records", got.Load(), n)
		}
		return float64(n) / time.Since(start).Seconds()
	}
	for b.Loop() {
		async := run(asyncN, func(s weir.Stream[int64]) weir.Stream[string] {
			return weir.AsyncMap(s, func(ctx context.Context, i int64, _ weir.AsyncCall) (string, error) { return get(ctx, i) },
				weir.WithAsyncCapacity(capacity), weir.WithAsyncUnordered())
		})
		ordered := run(asyncN, func(s weir.Stream[int64]) weir.Stream[string] {
			return weir.AsyncMap(s, func(ctx context.Context, i int64, _ weir.AsyncCall) (string, error) { return get(ctx, i) },
				weir.WithAsyncCapacity(capacity))
		})
		// The same calls without HTTP (a 50 ms timer): what the operator
		// achieves when the service costs no CPU here.
		timer := run(asyncN, func(s weir.Stream[int64]) weir.Stream[string] {
			return weir.AsyncMap(s, func(ctx context.Context, i int64, _ weir.AsyncCall) (string, error) {
				return strconv.FormatInt(i, 10), sleepOrDone(ctx, latency)
			}, weir.WithAsyncCapacity(capacity), weir.WithAsyncUnordered())
		})
		sync := run(syncN, func(s weir.Stream[int64]) weir.Stream[string] {
			return weir.Map(s, func(i int64) string {
				v, err := get(context.Background(), i)
				if err != nil {
					panic(err)
				}
				return v
			})
		})
		bound := float64(capacity) / latency.Seconds()
		b.ReportMetric(async, "unordered-rec/s")
		b.ReportMetric(ordered, "ordered-rec/s")
		b.ReportMetric(sync, "sync-map-rec/s")
		b.ReportMetric(timer, "no-http-rec/s")
		b.ReportMetric(async/bound, "unordered/bound")
		b.ReportMetric(ordered/bound, "ordered/bound")
		b.ReportMetric(async/sync, "unordered/sync")
		fmt.Printf("bound %.0f rec/s: unordered %.0f (%.2f), ordered %.0f (%.2f), without HTTP %.0f (%.2f), sync Map %.1f rec/s\n",
			bound, async, async/bound, ordered, ordered/bound, timer, timer/bound, sync)
	}
}
