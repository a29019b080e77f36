package bench

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/windows"
)

// expectedTotals adds up windows.Expected, the windows job's closed form
// computed naively: what the loop and the engine must both fire.
func expectedTotals(o windows.Options) windowTotals {
	var t windowTotals
	for _, l := range windows.Expected(o) {
		var acct, start, end, count, sum int64
		if _, err := fmt.Sscanf(l, "%d,%d,%d,%d,%d", &acct, &start, &end, &count, &sum); err != nil {
			panic(err)
		}
		t.firings++
		t.count += count
		t.sum += sum
	}
	return t
}

// TestBaselineWindows checks the hand-written loop against the naive
// closed form for several window sizes, disorders and key counts: the
// bench's baseline does the same work as the job.
func TestBaselineWindows(t *testing.T) {
	for _, c := range []struct{ events, keys, size, disorder int64 }{
		{20_000, 10_000, 10_000, 2000},
		{20_000, 100, 10_000, 2000},
		{5_000, 7, 300, 1000},
		{5_000, 3, 1000, 0},
	} {
		o := windows.Options{Events: c.events, Keys: c.keys, Spacing: 1, MaxDisorder: c.disorder, OutOfOrderness: c.disorder,
			Window: windows.Spec{Kind: "tumble", Size: c.size}}
		if got, want := baselineWindows(o), expectedTotals(o); got != want || got.count != c.events {
			t.Errorf("%+v: loop fired %+v, closed form %+v", c, got, want)
		}
	}
}

// TestBenchWindows runs the bench small through the binary: one JSON
// object with both backends, positive rates, the ratio of the figures and
// the watermark cost as defined in BENCHMARKS.md. (The bench itself fails
// when the engine's firings differ from the loop's.)
func TestBenchWindows(t *testing.T) {
	r := runWeir(t, 2*time.Minute, "bench", "windows", "--events", "20000", "--keys", "1000", "--runs", "1", "--json")
	if r.code != 0 {
		t.Fatalf("weir bench windows exited %d; stderr:\n%s", r.code, tail(r.stderr, 3000))
	}
	if n := strings.Count(strings.TrimSpace(r.stdout), "\n"); n != 0 {
		t.Fatalf("printed %d lines, want one JSON object:\n%s", n+1, r.stdout)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	for _, k := range []string{"benchmark", "events", "keys", "parallelism", "window_ms", "firings", "baseline_events_per_sec", "backends", "heap_ratio_met", "target_ratio"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("report lacks %q:\n%s", k, r.stdout)
		}
	}
	var rep windowsResult
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	o := windows.Options{Events: 20000, Keys: 1000, Spacing: 1, MaxDisorder: 2000, OutOfOrderness: 2000, Window: windows.Spec{Kind: "tumble", Size: 10_000}}
	if want := expectedTotals(o).firings; rep.Firings != want {
		t.Errorf("firings %d, want %d", rep.Firings, want)
	}
	if len(rep.Backends) != 2 || rep.Backends[0].Backend != "heap" || rep.Backends[1].Backend != "lsm" {
		t.Fatalf("backends %+v, want heap then lsm", rep.Backends)
	}
	for _, b := range rep.Backends {
		if b.EventsPerSec <= 0 || b.NoWatermarksEventsPerSec <= 0 || rep.BaselineEventsPerSec <= 0 {
			t.Errorf("%s: rates %+v, baseline %.0f: want positive", b.Backend, b, rep.BaselineEventsPerSec)
		}
		if d := b.Ratio - b.EventsPerSec/rep.BaselineEventsPerSec; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: ratio %g is not events_per_sec / baseline_events_per_sec", b.Backend, b.Ratio)
		}
		if d := b.WatermarkNsPerEvent - (b.Seconds-b.NoWatermarksSeconds)*1e9/20000; d > 1 || d < -1 {
			t.Errorf("%s: watermark_ns_per_event %g is not (seconds - no_watermarks_seconds) / events", b.Backend, b.WatermarkNsPerEvent)
		}
	}
	if rep.HeapRatioMet != (rep.Backends[0].Ratio >= rep.TargetRatio) {
		t.Errorf("heap_ratio_met %v with ratio %g and target %g", rep.HeapRatioMet, rep.Backends[0].Ratio, rep.TargetRatio)
	}
}
