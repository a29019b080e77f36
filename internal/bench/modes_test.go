package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The checkpoint-mode benches at a short duration: one JSON object with
// the keys per mode, every mode in its own child process with
// completed checkpoints, and the figures that make each bench's point.

// modeKeys are the keys the issue requires of every mode.
var modeKeys = []string{"mode", "checkpoint_duration_ms", "alignment_buffered_bytes", "peak_rss_bytes", "checkpoints"}

// runBenchJSON runs a bench with --json and checks the report's shape: the
// bench's name, a config, and exactly the modes wanted, in order, each with
// the required keys as numbers and at least one checkpoint.
func runBenchJSON(t *testing.T, bench string, modes []string, args ...string) ([]modeResult, benchReport) {
	t.Helper()
	r := runWeir(t, 2*time.Minute, append([]string{"bench", bench, "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("weir bench %s exited %d; stderr:\n%s", bench, r.code, tail(r.stderr, 3000))
	}
	if n := strings.Count(strings.TrimSpace(r.stdout), "\n"); n != 0 {
		t.Fatalf("bench %s printed %d lines, want one JSON object:\n%s", bench, n+1, r.stdout)
	}
	var raw struct {
		Bench  string           `json:"bench"`
		Config map[string]any   `json:"config"`
		Modes  []map[string]any `json:"modes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatalf("bench %s output is not JSON: %v\n%s", bench, err, r.stdout)
	}
	if raw.Bench != bench || len(raw.Config) == 0 || len(raw.Modes) != len(modes) {
		t.Fatalf("bench %s report: bench %q, config %v, %d modes; want its name, a config and modes %v:\n%s", bench, raw.Bench, raw.Config, len(raw.Modes), modes, r.stdout)
	}
	for i, m := range raw.Modes {
		for _, k := range modeKeys {
			v, ok := m[k]
			if !ok {
				t.Errorf("mode %d of bench %s lacks %q: %v", i, bench, k, m)
				continue
			}
			if _, num := v.(float64); k != "mode" && !num {
				t.Errorf("mode %d of bench %s: %q is %v, not a number", i, bench, k, v)
			}
		}
		if m["mode"] != modes[i] {
			t.Errorf("mode %d of bench %s is %v, want %s", i, bench, m["mode"], modes[i])
		}
	}
	var typed benchReport
	if err := json.Unmarshal([]byte(r.stdout), &typed); err != nil {
		t.Fatal(err)
	}
	for _, m := range typed.Modes {
		if m.Checkpoints < 1 || m.PeakRSSBytes <= 0 || m.FailedCheckpoints != 0 {
			t.Errorf("bench %s mode %s: %d checkpoints completed, %d failed, peak RSS %d; want some, none and a positive RSS", bench, m.Mode, m.Checkpoints, m.FailedCheckpoints, m.PeakRSSBytes)
		}
	}
	return typed.Modes, typed
}

// TestBenchSkewSmoke: with B's barrier 400 ms behind its backlog, an
// aligned checkpoint waits for it while A's channel is blocked (data held
// back), and an unaligned one persists the overtaken records instead.
func TestBenchSkewSmoke(t *testing.T) {
	const delay = 400 * time.Millisecond
	modes, _ := runBenchJSON(t, "skew", []string{modeAligned, modeUnaligned}, "--duration", "2s", "--delay", delay.String(), "--interval", "200ms")
	if t.Failed() {
		return
	}
	aligned, unaligned := modes[0], modes[1]
	if d := time.Duration(aligned.CheckpointDurationMs) * time.Millisecond; d < delay/2 {
		t.Errorf("aligned checkpoints took %s (median), want about the %s B's barrier waits", d, delay)
	}
	if aligned.AlignmentBufferedBytes <= 0 || aligned.PersistedBytes != 0 {
		t.Errorf("aligned: %d bytes held back, %d persisted; want some held back (A blocked) and none persisted", aligned.AlignmentBufferedBytes, aligned.PersistedBytes)
	}
	if unaligned.PersistedBytes <= 0 || unaligned.AlignmentBufferedBytes != unaligned.PersistedBytes {
		t.Errorf("unaligned: %d bytes buffered, %d persisted; want the overtaken records persisted, and buffered equal to them", unaligned.AlignmentBufferedBytes, unaligned.PersistedBytes)
	}
}

// TestBenchBackpressureSmoke: every mode completes checkpoints under full
// backpressure, and the report carries the targets and the baseline.
func TestBenchBackpressureSmoke(t *testing.T) {
	modes, rep := runBenchJSON(t, "backpressure", []string{modeAligned, modeUnaligned, modeAlignedTimeout},
		"--duration", "1500ms", "--interval", "200ms", "--batch-size", "256")
	if t.Failed() {
		return
	}
	for _, m := range modes[1:] {
		if m.PersistedBytes <= 0 {
			t.Errorf("%s: no channel state persisted under backpressure (median), want the overtaken records", m.Mode)
		}
	}
	// One duration target and one memory target per mode; their verdicts
	// depend on the machine, so only their presence is checked.
	if len(rep.Target) != 1+len(modes) || rep.Extra["peak_rss_bytes"] == nil {
		t.Errorf("targets %+v and baseline %v: want 4 targets and the no-checkpoint baseline's peak RSS", rep.Target, rep.Extra)
	}
}
