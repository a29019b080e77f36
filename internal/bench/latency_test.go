package bench

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// exactQuantile is the nearest-rank quantile of sorted samples: the
// ceil(q*n)-th smallest, as latencyHist.quantile defines it.
func exactQuantile(sorted []int64, q float64) int64 {
	r := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(r, 1), len(sorted))-1]
}

// TestLatencyHistQuantiles records known samples (exact small values, a
// uniform range, and a seeded long-tailed mix from nanoseconds to
// minutes) and checks every quantile against the sorted samples: never
// below the exact one, at most one bucket (1/128) above it.
func TestLatencyHistQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string][]int64{}
	for v := int64(0); v < 256; v++ {
		cases["exact"] = append(cases["exact"], v)
	}
	for v := int64(1); v <= 100_000; v++ {
		cases["uniform"] = append(cases["uniform"], v*1000) // 1 µs .. 100 ms
	}
	for range 200_000 {
		// log-uniform over 1 ns .. ~3 min, plus a few huge values.
		cases["longtail"] = append(cases["longtail"], int64(math.Exp(rng.Float64()*math.Log(2e11))))
	}
	cases["longtail"] = append(cases["longtail"], math.MaxInt64, 1<<62)
	for name, samples := range cases {
		var h latencyHist
		// Two halves merged, as the sinks' histograms are.
		var h2 latencyHist
		for i, v := range samples {
			if i%2 == 0 {
				h.record(v)
			} else {
				h2.record(v)
			}
		}
		h.merge(&h2)
		sorted := slices.Clone(samples)
		slices.Sort(sorted)
		if h.total != uint64(len(samples)) {
			t.Fatalf("%s: total %d, want %d", name, h.total, len(samples))
		}
		for _, q := range []float64{0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
			got, want := h.quantile(q), exactQuantile(sorted, q)
			if got < want || float64(got) > float64(want)*(1+1.0/histSub)+1 {
				t.Errorf("%s: quantile(%g) = %d, exact %d: want within [exact, exact*(1+1/%d)]", name, q, got, want, histSub)
			}
			if name == "exact" && got != want {
				t.Errorf("exact: quantile(%g) = %d, want %d (values below 256 ns have their own buckets)", q, got, want)
			}
		}
		if got := h.quantile(1); got != sorted[len(sorted)-1] {
			t.Errorf("%s: quantile(1) = %d, want the largest sample %d", name, got, sorted[len(sorted)-1])
		}
	}
	var empty latencyHist
	if got := empty.quantile(0.99); got != 0 {
		t.Errorf("empty histogram: quantile = %d, want 0", got)
	}
}

// TestLatencyHistBuckets checks the bucket arithmetic on every power of
// two and its neighbours: each value lies in its bucket (above the
// previous bucket's largest value, at most its own), buckets are no wider
// than 1/128 of their values, and indexes stay in range.
func TestLatencyHistBuckets(t *testing.T) {
	var vs []int64
	for s := 0; s < 63; s++ {
		p := int64(1) << s
		vs = append(vs, p-1, p, p+1, p+p/3)
	}
	vs = append(vs, math.MaxInt64)
	for _, v := range vs {
		if v < 0 {
			continue
		}
		i := histIndex(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d, outside [0, %d)", v, i, histBuckets)
		}
		if up := histUpper(i); up < v || (i > 0 && histUpper(i-1) >= v) {
			t.Errorf("value %d in bucket %d, whose range is (%d, %d]", v, i, histUpper(i-1), up)
		}
		if i > 0 {
			if w := histUpper(i) - histUpper(i-1); v >= 2*histSub && float64(w) > float64(v)/histSub+1 {
				t.Errorf("bucket %d of value %d is %d wide, more than 1/%d of it", i, v, w, histSub)
			}
		}
	}
	var h latencyHist
	h.record(-5)
	if h.quantile(1) != 0 || h.total != 1 {
		t.Errorf("a negative duration counts as 0: quantile %d total %d", h.quantile(1), h.total)
	}
}

// TestTxnTimesSample adds more creation times than a transaction keeps
// and checks the decimated sample: bounded, weights adding up to the
// records seen, and its weighted quantiles close to the exact ones.
func TestTxnTimesSample(t *testing.T) {
	for _, n := range []int{10, txnSamples, txnSamples + 1, 3*txnSamples + 17, 1_000_003} {
		tt := &txnTimes{times: make([]int64, 0, txnSamples)}
		tt.reset()
		for i := 0; i < n; i++ {
			tt.add(int64(i) * 1000)
		}
		if len(tt.times) > txnSamples || cap(tt.times) != txnSamples {
			t.Fatalf("n=%d: kept %d times (cap %d), bound %d", n, len(tt.times), cap(tt.times), txnSamples)
		}
		var h latencyHist
		var sum uint64
		for j, c := range tt.times {
			if c != int64(uint64(j)*tt.stride)*1000 {
				t.Fatalf("n=%d: kept time %d is %d, want record %d's", n, j, c, uint64(j)*tt.stride)
			}
			sum += tt.weight(j)
			h.recordN(int64(n)*1000-c, tt.weight(j)) // a commit at the end
		}
		if sum != uint64(n) {
			t.Fatalf("n=%d: weights add up to %d", n, sum)
		}
		// The exact commit latencies are 1000*(n-i) for i < n.
		for _, q := range []float64{0.5, 0.99} {
			want := float64(exactRank(n, q)) * 1000
			if got := float64(h.quantile(q)); math.Abs(got-want) > want/histSub+float64(tt.stride)*1000 {
				t.Errorf("n=%d: commit quantile(%g) from the sample %g, exact %g", n, q, got, want)
			}
		}
	}
}

// exactRank is the nearest-rank q-quantile of the values 1..n.
func exactRank(n int, q float64) int { return max(int(math.Ceil(q*float64(n))), 1) }

// contractRunFields are the fields of each run, exactly.
var contractRunFields = []string{"buffer_timeout_ms", "records_per_sec", "p50_ms", "p99_ms", "p999_ms", "commit_p99_ms"}

// TestBenchLatency runs the bench tiny through the binary: one JSON object
// whose runs carry the contract's fields, one run per buffer timeout
// (the default, 100 ms, then 1 ms), ordered quantiles, commits after
// arrivals, and measured runs held to half the default timeout's
// maximum.
func TestBenchLatency(t *testing.T) {
	r := runWeir(t, 3*time.Minute, "bench", "latency", "--rounds", "1", "--duration", "1s", "--warmup", "300ms",
		"--calibration", "700ms", "--checkpoint-interval", "200ms", "--keys", "100", "--json")
	if r.code != 0 {
		t.Fatalf("weir bench latency exited %d; stderr:\n%s", r.code, tail(r.stderr, 3000))
	}
	if n := strings.Count(strings.TrimSpace(r.stdout), "\n"); n != 0 {
		t.Fatalf("printed %d lines, want one JSON object:\n%s", n+1, r.stdout)
	}
	var raw struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if len(raw.Runs) != 2 {
		t.Fatalf("%d runs, want 2 (default and 1 ms):\n%s", len(raw.Runs), r.stdout)
	}
	for i, run := range raw.Runs {
		for _, k := range contractRunFields {
			if _, ok := run[k].(float64); !ok {
				t.Errorf("run %d: %q missing or not a number:\n%s", i, k, r.stdout)
			}
		}
	}
	var rep latencyResult
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Benchmark != "latency" || rep.DefaultBufferTimeoutMs != 100 || rep.CheckpointIntervalMs != 200 {
		t.Errorf("header %+v: want benchmark latency, default timeout 100 ms, interval 200 ms", rep)
	}
	def, one := rep.Runs[0], rep.Runs[1]
	if def.BufferTimeoutMs != 100 || !def.DefaultTimeout || one.BufferTimeoutMs != 1 || one.DefaultTimeout {
		t.Fatalf("runs' timeouts %g (default %v) and %g (default %v): want 100 (default) then 1", def.BufferTimeoutMs, def.DefaultTimeout, one.BufferTimeoutMs, one.DefaultTimeout)
	}
	for _, run := range rep.Runs {
		name := run.BufferTimeoutMs
		if run.RecordsPerSec <= 0 || run.MaxRecordsPerSec <= 0 || run.MeasuredRecords <= 0 {
			t.Errorf("%g ms: rates %g and %g, %d measured: want positive", name, run.RecordsPerSec, run.MaxRecordsPerSec, run.MeasuredRecords)
		}
		if !(run.P50Ms > 0 && run.P50Ms <= run.P99Ms && run.P99Ms <= run.P999Ms && run.P999Ms <= run.MaxMs) {
			t.Errorf("%g ms: quantiles p50 %g p99 %g p999 %g max %g: want 0 < p50 <= p99 <= p999 <= max", name, run.P50Ms, run.P99Ms, run.P999Ms, run.MaxMs)
		}
		// A record is committed after it arrived, at a checkpoint after it.
		if run.CommittedRecords <= 0 || run.CommittedRecords > run.MeasuredRecords || run.CommitP50Ms < run.P50Ms || run.CommitP99Ms < run.CommitP50Ms {
			t.Errorf("%g ms: %d of %d records committed, commit p50 %g p99 %g, arrival p50 %g", name, run.CommittedRecords, run.MeasuredRecords, run.CommitP50Ms, run.CommitP99Ms, run.P50Ms)
		}
		if run.Checkpoints < 1 {
			t.Errorf("%g ms: no completed checkpoint", name)
		}
		// The throttle holds the measured runs to --load (0.5) of the
		// default timeout's maximum in the same round (a source behind
		// its schedule at the window's start catches up in it: slack).
		if limit := 0.5 * def.MaxRecordsPerSec * 1.25; run.RecordsPerSec > limit {
			t.Errorf("%g ms: %.0f records/s, above half the default's maximum %.0f", name, run.RecordsPerSec, def.MaxRecordsPerSec)
		}
		if d := run.TargetCommitMs - (run.CheckpointIntervalMs + run.CheckpointP99Ms); math.Abs(d) > 1e-9 {
			t.Errorf("%g ms: target_commit_ms %g is not interval + checkpoint p99 (%g + %g)", name, run.TargetCommitMs, run.CheckpointIntervalMs, run.CheckpointP99Ms)
		}
		if run.P99Met != (run.P99Ms <= run.TargetP99Ms) || run.CommitMet != (run.CommitP99Ms <= run.TargetCommitMs) {
			t.Errorf("%g ms: met flags %v/%v disagree with p99 %g <= %g, commit %g <= %g", name, run.P99Met, run.CommitMet, run.P99Ms, run.TargetP99Ms, run.CommitP99Ms, run.TargetCommitMs)
		}
		t.Logf("%g ms: %.0f rec/s (max %.0f) p50 %.2f p99 %.2f p999 %.2f ms, commit p99 %.0f ms, %d/%d committed",
			name, run.RecordsPerSec, run.MaxRecordsPerSec, run.P50Ms, run.P99Ms, run.P999Ms, run.CommitP99Ms, run.CommittedRecords, run.MeasuredRecords)
	}
	if def.TargetP99Ms != 200 || one.TargetP99Ms != 10 {
		t.Errorf("p99 targets %g and %g ms, want 200 (2 x 100 ms) and 10", def.TargetP99Ms, one.TargetP99Ms)
	}
	if def.ThroughputCost != 0 || math.Abs(one.ThroughputCost-(1-one.MaxRecordsPerSec/def.MaxRecordsPerSec)) > 1e-9 {
		t.Errorf("throughput costs %g and %g: want 0 and 1 - max(1 ms)/max(default)", def.ThroughputCost, one.ThroughputCost)
	}
}

// TestLatencyJobInProcess runs the job once in this process (so that
// -race sees the sinks' figures handed over after the job ended) at a
// fixed rate: the measured rate is the throttle's, every measured record
// is committed (the tail covers a checkpoint after the window), and a
// commit comes at least one arrival later.
func TestLatencyJobInProcess(t *testing.T) {
	o := latencyRunConfig{keys: 50, parallelism: 2, rate: 200_000, bufferTimeout: time.Millisecond,
		interval: 100 * time.Millisecond, warmup: 200 * time.Millisecond, window: 500 * time.Millisecond, tail: 700 * time.Millisecond}
	r, err := runLatencyJob(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.recordsPerSec(o.window); got < 0.5*o.rate || got > 1.25*o.rate {
		t.Errorf("measured %.0f records/s at a rate of %.0f", got, o.rate)
	}
	if r.commit.total != r.arrival.total || r.aborted != 0 {
		t.Errorf("%d of %d measured records committed, %d aborted", r.commit.total, r.arrival.total, r.aborted)
	}
	if r.all <= int64(r.arrival.total) {
		t.Errorf("%d records reached the sinks, %d measured: the warm-up and tail must be outside the window", r.all, r.arrival.total)
	}
	if len(r.checkpoints) < 3 || r.commit.quantile(0.5) <= r.arrival.quantile(0.5) {
		t.Errorf("%d checkpoints, commit p50 %d ns, arrival p50 %d ns", len(r.checkpoints), r.commit.quantile(0.5), r.arrival.quantile(0.5))
	}
}
