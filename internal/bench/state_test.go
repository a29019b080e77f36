package bench

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestChurnScheduleIsAPermutation checks, for key counts that make strides
// awkward (primes, powers of two, multiples of small primes), that a phase
// never writes a key twice and that a full pass (churn 1) writes every key
// exactly once; against a naive set.
func TestChurnScheduleIsAPermutation(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	counts := []int64{1, 2, 3, 4, 10, 16, 97, 210, 1024, 2310, 30030}
	for range 20 {
		counts = append(counts, 1+rng.Int64N(50_000))
	}
	for _, keys := range counts {
		s, err := newChurnSchedule(keys, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []int{0, 1, 2, 7} {
			seen := make([]bool, keys)
			for j := int64(0); j < s.phaseLen(p); j++ {
				k := s.key(p, j)
				if k < 0 || k >= keys {
					t.Fatalf("keys=%d phase %d record %d: key %d out of range", keys, p, j, k)
				}
				if seen[k] {
					t.Fatalf("keys=%d phase %d: key %d written twice (stride %d)", keys, p, k, s.stride)
				}
				seen[k] = true
			}
			if s.phaseLen(p) != keys {
				t.Fatalf("keys=%d churn 1 phase %d: %d records", keys, p, s.phaseLen(p))
			}
		}
	}
}

func TestChurnSchedulePhasesDiffer(t *testing.T) {
	s, err := newChurnSchedule(1_000_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if s.phaseLen(0) != 1_000_000 || s.phaseLen(3) != 10_000 || s.recordsThrough(2) != 1_020_000 {
		t.Fatalf("phase lengths %d %d, through 2: %d", s.phaseLen(0), s.phaseLen(3), s.recordsThrough(2))
	}
	// Two phases share about churn × per-phase keys by chance; a schedule
	// that repeats its keys would share all of them.
	first := map[int64]bool{}
	for j := int64(0); j < s.phaseLen(1); j++ {
		first[s.key(1, j)] = true
	}
	shared := 0
	for j := int64(0); j < s.phaseLen(2); j++ {
		if first[s.key(2, j)] {
			shared++
		}
	}
	if shared > 1000 {
		t.Fatalf("phases 1 and 2 share %d of 10000 keys", shared)
	}
}

func TestChurnScheduleRejects(t *testing.T) {
	for _, c := range []struct {
		keys  int64
		churn float64
	}{{0, 0.1}, {10, 0}, {10, 1.5}, {10, -1}} {
		if _, err := newChurnSchedule(c.keys, c.churn); err == nil {
			t.Errorf("keys %d churn %v: accepted", c.keys, c.churn)
		}
	}
}

func TestValueCheck(t *testing.T) {
	v := make([]byte, 100)
	fillValue(v, 42, 3)
	if err := checkValue(v, 42, 4, 100); err != nil {
		t.Fatalf("older version of the same key refused: %v", err)
	}
	for _, c := range []struct {
		key, version int64
		size         int
	}{{43, 4, 100}, {42, 3, 100}, {42, 2, 100}, {42, 4, 99}} {
		if err := checkValue(v, c.key, c.version, c.size); err == nil {
			t.Errorf("value of key 42 version 3 accepted for key %d version %d size %d", c.key, c.version, c.size)
		}
	}
	w := make([]byte, 100)
	fillValue(w, 42, 4)
	if string(v[16:]) == string(w[16:]) {
		t.Fatal("versions 3 and 4 have the same payload")
	}
	odd := make([]byte, 23) // a tail shorter than 8 bytes is filled too
	fillValue(odd, 1, 1)
	if odd[22] == 0 && odd[21] == 0 && odd[20] == 0 {
		t.Fatalf("tail not filled: %v", odd)
	}
}

// TestUploadMeter: a checkpoint's bytes are its own folder plus shared
// files it is the first to show; files already counted are not counted
// again, and files removed by retention are no error.
func TestUploadMeter(t *testing.T) {
	job := t.TempDir()
	write := func(rel string, n int) {
		t.Helper()
		p := filepath.Join(job, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := newUploadMeter(job)
	write("chk-1/state-0.keyed", 1000)
	write("chk-1/_metadata", 10)
	if got, err := m.measure(1); err != nil || got != 1010 {
		t.Fatalf("full checkpoint 1: %d, %v; want 1010", got, err)
	}
	write("chk-2/_metadata", 20)
	write("shared/a.sst", 300)
	write("shared/b.sst", 400)
	if got, err := m.measure(2); err != nil || got != 720 {
		t.Fatalf("incremental checkpoint 2: %d, %v; want 720", got, err)
	}
	write("chk-3/_metadata", 30)
	write("shared/c.sst", 50)
	write("shared/store-1/d.sst", 5) // a folder per store is counted too
	if err := os.Remove(filepath.Join(job, "shared/a.sst")); err != nil {
		t.Fatal(err)
	}
	if got, err := m.measure(3); err != nil || got != 85 {
		t.Fatalf("incremental checkpoint 3: %d, %v; want 85 (c.sst and d.sst only)", got, err)
	}
	if _, err := m.measure(4); err != nil {
		t.Fatalf("a checkpoint whose folder is gone: %v", err)
	}
}

func TestParseVmHWM(t *testing.T) {
	status := "Name:\tweir\nVmPeak:\t  999 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1024 kB\n"
	if got := parseVmHWM(bufio.NewScanner(strings.NewReader(status))); got != 2048<<10 {
		t.Fatalf("VmHWM %d, want %d", got, 2048<<10)
	}
	if got := parseVmHWM(bufio.NewScanner(strings.NewReader("VmRSS: 1 kB\n"))); got != 0 {
		t.Fatalf("no VmHWM line: %d", got)
	}
	if peakRSS() <= 0 {
		t.Skip("no /proc/self/status here")
	}
}

func TestMedians(t *testing.T) {
	if medianInt64(nil) != 0 || medianInt64([]int64{5, 1, 3}) != 3 || medianInt64([]int64{4, 1, 3, 2}) != 3 {
		t.Fatal("medianInt64")
	}
	if medianFloat([]float64{2.5, 0.5, 1.5}) != 1.5 {
		t.Fatal("medianFloat")
	}
}

// TestBenchStateSmoke runs `weir bench state --json` with tiny settings on
// the lsm backend and checks the report's shape and what must hold of it:
// full checkpoints upload about the full state, the restore run restored
// the last checkpoint, and both backends of the comparison ran.
func TestBenchStateSmoke(t *testing.T) {
	const keys = 4000
	r := runWeir(t, 2*time.Minute, "bench", "state", "--keys", "4000", "--churn", "0.05", "--checkpoints", "3",
		"--checkpoint-interval", "0", "--compare-heap-keys", "3000", "--incremental", "--dir", t.TempDir(), "--json")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, tail(r.stderr, 3000))
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one JSON line on stdout, got %d:\n%s", len(lines), r.stdout)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	for _, k := range []string{"full_size_bytes", "incremental_bytes_per_checkpoint", "checkpoint_duration_ms", "restore_ms", "peak_rss_bytes", "load_records_per_sec", "update_records_per_sec"} {
		v, ok := m[k].(float64)
		if !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, m[k])
		}
	}
	var res stateBenchResult
	if err := json.Unmarshal([]byte(lines[0]), &res); err != nil {
		t.Fatal(err)
	}
	if res.FullSizeBytes < keys*100 || res.FullSizeBytes > keys*150 {
		t.Errorf("full size %d for %d keys of 100 bytes", res.FullSizeBytes, keys)
	}
	if len(res.PerCheckpoint) != 4 || res.RestoredCheckpoint != res.PerCheckpoint[3].ID {
		t.Errorf("checkpoints %+v, restored %d: want 4, the last one restored", res.PerCheckpoint, res.RestoredCheckpoint)
	}
	if strings.HasPrefix(res.IncrementalMode, "refused") || res.IncrementalMode == "off" {
		// Full checkpoints: every one uploads the whole state.
		if res.IncrementalFraction < 0.95 || res.IncrementalTargetMet {
			t.Errorf("full checkpoints (%s) report %.3f of the state uploaded", res.IncrementalMode, res.IncrementalFraction)
		}
	}
	c := res.Compare
	if c == nil || c.Keys != 3000 || c.Heap.UpdateRecordsPerSec <= 0 || c.LSM.UpdateRecordsPerSec <= 0 || c.Heap.PeakRSSBytes <= 0 {
		t.Errorf("comparison %+v", c)
	}
}

func TestBenchStateUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--churn", "0"}, {"--value-bytes", "8"}, {"--state-backend", "rocks"}, {"--keys", "0"}, {"--checkpoints", "0"},
	} {
		r := runWeir(t, 30*time.Second, append([]string{"bench", "state"}, args...)...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage); stderr %s", args, r.code, r.stderr)
		}
	}
}
