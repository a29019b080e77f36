package bench

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"maps"
)

// keyedSumFields are the JSON fields of keyed-sum before --memory: the
// contract of `--keys N` without the new flags.
var keyedSumFields = []string{"benchmark", "records", "keys", "parallelism", "checkpoint_interval", "runs",
	"records_per_sec", "baseline_records_per_sec", "ratio", "completed_checkpoints", "engine_seconds", "baseline_seconds"}

// keyedSumLines runs keyed-sum with --json and decodes every line.
func keyedSumLines(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	r := runWeir(t, 3*time.Minute, append([]string{"bench", "keyed-sum", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("weir bench keyed-sum %v exited %d; stderr:\n%s", args, r.code, tail(r.stderr, 3000))
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not a JSON object: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// A single --keys value prints exactly the fields it always did.
func TestKeyedSumSingleKeysUnchanged(t *testing.T) {
	lines := keyedSumLines(t, "--records", "100000", "--keys", "1000", "--runs", "1")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want one JSON object", len(lines))
	}
	got := slices.Sorted(maps.Keys(lines[0]))
	want := slices.Sorted(slices.Values(keyedSumFields))
	if !slices.Equal(got, want) {
		t.Errorf("fields %v, want exactly %v", got, want)
	}
}

// --memory with a --keys list: one object per key count, in order, with the
// throughput fields and the memory figures of both children. At 100 k keys
// a key's state (an int64 key and two int64s in a Go map slot) cannot take
// under 24 bytes, in the engine or the loop: a live heap below that would
// mean the measurement missed the state (taken after the tasks released
// it); far above it would mean it counted something else.
func TestKeyedSumMemorySweep(t *testing.T) {
	lines := keyedSumLines(t, "--records", "300000", "--keys", "1000,100000", "--runs", "1", "--memory")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one per key count (2)", len(lines))
	}
	memFields := []string{"state_backend", "memory_runs", "state_keys", "engine_start_rss_bytes", "engine_peak_rss_bytes",
		"engine_bytes_per_key", "engine_live_heap_bytes_per_key", "baseline_start_rss_bytes", "baseline_peak_rss_bytes",
		"baseline_bytes_per_key", "baseline_live_heap_bytes_per_key", "bytes_per_key_ratio", "live_heap_ratio"}
	for i, keys := range []float64{1000, 100000} {
		m := lines[i]
		if m["keys"] != keys || m["state_keys"] != keys || m["state_backend"] != "heap" {
			t.Errorf("line %d: keys %v, state_keys %v, backend %v; want %v, %v, heap", i, m["keys"], m["state_keys"], m["state_backend"], keys, keys)
		}
		for _, f := range append(slices.Clone(keyedSumFields), memFields...) {
			if _, ok := m[f]; !ok {
				t.Errorf("line %d lacks %q", i, f)
			}
		}
		for _, role := range []string{"engine", "baseline"} {
			start, peak := m[role+"_start_rss_bytes"].(float64), m[role+"_peak_rss_bytes"].(float64)
			if start <= 0 || peak < start {
				t.Errorf("line %d: %s RSS start %v, peak %v; want 0 < start <= peak", i, role, start, peak)
			}
		}
		if m["ratio"].(float64) <= 0 {
			t.Errorf("line %d: ratio %v: the throughput rounds did not run", i, m["ratio"])
		}
	}
	big := lines[1]
	for _, f := range []string{"engine_live_heap_bytes_per_key", "baseline_live_heap_bytes_per_key"} {
		if v := big[f].(float64); v < 24 || v > 400 {
			t.Errorf("%s = %.1f at 100000 keys, want within [24, 400]", f, v)
		}
	}
}

// lsm: the configured bound of the stores is reported, -D included, and
// --runs 0 skips the throughput rounds.
func TestKeyedSumMemoryLSMBound(t *testing.T) {
	lines := keyedSumLines(t, "--records", "50000", "--keys", "20000", "--runs", "0", "--memory",
		"--state-backend", "lsm", "-D", "state.backend.lsm.block-cache-size=8mb", "-D", "state.backend.lsm.memtable-size=2mb",
		"-D", "state.backend.lsm.write-buffer-size=4mb")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want one", len(lines))
	}
	m := lines[0]
	// Per store: the cache, 2 memtables and the write buffer counted twice
	// with its reuse slack (lsm.Options.MemoryBound).
	if want := float64(2 * (8<<20 + 2*2<<20 + 2*(4<<20+4<<20/16))); m["lsm_memory_bound_bytes"] != want {
		t.Errorf("lsm_memory_bound_bytes %v, want %v (2 stores of 8 MiB cache + 2 memtables of 2 MiB + 2 × 17/16 × 4 MiB write buffer)", m["lsm_memory_bound_bytes"], want)
	}
	if m["state_backend"] != "lsm" || m["runs"] != 0.0 || m["ratio"] != 0.0 {
		t.Errorf("backend %v, runs %v, ratio %v; want lsm, 0, 0", m["state_backend"], m["runs"], m["ratio"])
	}
	if v, _ := m["engine_rss_over_lsm_bound"].(float64); v <= 0 {
		t.Errorf("engine_rss_over_lsm_bound %v, want > 0", m["engine_rss_over_lsm_bound"])
	}
}
