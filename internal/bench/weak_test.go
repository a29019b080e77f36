package bench

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/vfs"
)

// TestBenchWeakSmoke runs `weir bench weak --json` end to end at tiny
// durations (in -short too) and checks the report: every section with
// every mode in order and no mode failed, and the figures that do not
// depend on the machine's speed — aligned checkpoints wait for the late
// barrier and weak ones do not, every planned failure fired and
// recovered, the weak and exactly-once outputs are exact and the weak
// accounting agrees, a task's snapshot fails less often than a 8-task
// checkpoint. The targets' verdicts depend on the machine, so only their
// presence is checked.
func TestBenchWeakSmoke(t *testing.T) {
	const (
		failures = 2
		tasks    = 8
		pFail    = 0.1
		delay    = 400 * time.Millisecond
	)
	r := runWeir(t, 6*time.Minute, "bench", "weak", "--json", "--duration", "2s", "--interval", "300ms",
		"--delay", delay.String(), "--skew-rate", "100000", "--recovery-rate", "20000", "--failures", "2",
		"--scale-tasks", "8", "--scale-failure", "0.1", "--scale-interval", "100ms", "--cost-rounds", "1")
	if r.code != 0 {
		t.Fatalf("weir bench weak exited %d; stderr:\n%s", r.code, tail(r.stderr, 3000))
	}
	if n := strings.Count(strings.TrimSpace(r.stdout), "\n"); n != 0 {
		t.Fatalf("bench weak printed %d lines, want one JSON object:\n%s", n+1, r.stdout)
	}
	// Required keys, checked on the raw object: a renamed field must fail
	// here, not decode as zero.
	var raw map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatalf("bench weak output is not JSON: %v\n%s", err, r.stdout)
	}
	for _, k := range []string{"bench", "config", "loadavg_before", "loadavg_after", "met", "skew", "recovery", "scale", "cost"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("report lacks %q", k)
		}
	}
	for _, s := range weakSections {
		sec, _ := raw[s].(map[string]any)
		for _, k := range []string{"modes", "baseline", "target", "met"} {
			if _, ok := sec[k]; !ok {
				t.Errorf("section %s lacks %q", s, k)
			}
		}
	}
	var rep weakReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if t.Failed() || rep.Bench != "weak" || rep.Skew == nil || rep.Recovery == nil || rep.Scale == nil || rep.Cost == nil {
		t.Fatalf("report incomplete:\n%s", r.stdout)
	}
	for _, sec := range []struct {
		name  string
		modes []weakChild
	}{{sectionSkew, rep.Skew.Modes}, {sectionRecovery, rep.Recovery.Modes}, {sectionScale, rep.Scale.Modes}, {sectionCost, rep.Cost.Modes}} {
		var got []string
		for _, m := range sec.modes {
			got = append(got, m.Mode)
			if m.Error != "" {
				t.Errorf("%s, mode %s failed: %s", sec.name, m.Mode, m.Error)
			}
		}
		if want := weakSectionModes(sec.name); !slices.Equal(got, want) {
			t.Errorf("%s modes %v, want %v", sec.name, got, want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	mode := func(modes []weakChild, m string) weakChild { return *modeOf(modes, m) }

	// Skew: aligned waits for B's barrier, weak has no barrier to wait
	// for and takes snapshots all the same.
	sa, sw := mode(rep.Skew.Modes, modeAligned), mode(rep.Skew.Modes, modeWeak)
	if d := time.Duration(sa.AlignmentMs) * time.Millisecond; sa.Checkpoints < 1 || d < delay/2 {
		t.Errorf("skew aligned: %d checkpoints, alignment %s (median); want some, about the %s B's barrier waits", sa.Checkpoints, d, delay)
	}
	if sw.Checkpoints < 1 || sw.AlignmentMs != 0 || sw.RecordsPerSec <= 0 || sw.P99Ms <= 0 {
		t.Errorf("skew weak: %d task snapshots, alignment %d ms, %.0f records/s, p99 %.1f ms; want snapshots, no alignment, a rate and a latency", sw.Checkpoints, sw.AlignmentMs, sw.RecordsPerSec, sw.P99Ms)
	}
	if sa.RecordsPerSec > 0 && math.Abs(rep.Skew.Ratio-sw.RecordsPerSec/sa.RecordsPerSec) > 1e-9 {
		t.Errorf("skew ratio %v, but weak/aligned records/s are %v/%v", rep.Skew.Ratio, sw.RecordsPerSec, sa.RecordsPerSec)
	}

	// Recovery: every failure fired and recovered in every mode; the
	// exactly-once and weak outputs are exact, and weak's accounting
	// says so and counts one restarted task per failure.
	for _, m := range rep.Recovery.Modes {
		if m.FailuresFired != failures || len(m.RecoveryMs) != failures || m.RecoveryP50Ms <= 0 {
			t.Errorf("recovery %s: %d failures fired, recoveries %v; want %d, each measured", m.Mode, m.FailuresFired, m.RecoveryMs, failures)
		}
		if m.ExpectedLines == 0 || m.OthersBeforePerSec <= 0 {
			t.Errorf("recovery %s: %d expected lines, others %.0f records/s before the failures; want both positive", m.Mode, m.ExpectedLines, m.OthersBeforePerSec)
		}
		exact := m.Mode == modeWeak || m.Mode == modeAligned || m.Mode == modeUnaligned
		if exact && (m.MissingLines != 0 || m.DuplicatedLines != 0 || m.WrongLines != 0 || m.CommittedLines != m.ExpectedLines) {
			t.Errorf("recovery %s: %d of %d lines committed, %d missing, %d duplicated, %d wrong; want the exact output", m.Mode, m.CommittedLines, m.ExpectedLines, m.MissingLines, m.DuplicatedLines, m.WrongLines)
		}
	}
	rw := mode(rep.Recovery.Modes, modeWeak)
	if w := rw.Weak; w == nil || w.Failures != failures || w.TaskRestarts != failures || w.Lost != 0 || w.Duplicated != 0 || w.Recoveries != failures {
		t.Errorf("recovery weak accounting %+v: want %d failures, task restarts and recoveries, nothing lost or duplicated", rw.Weak, failures)
	}
	if !rep.Recovery.ExactMet {
		t.Errorf("recovery: exact_met false with an exact output and accounting")
	}

	// Scale: a weak task snapshot fails about pFail of the time, an
	// aligned checkpoint of 8 tasks about 1-(1-pFail)^8 = 57 %.
	ca, cw := mode(rep.Scale.Modes, modeAligned), mode(rep.Scale.Modes, modeWeak)
	for _, m := range []weakChild{ca, cw} {
		if m.Triggered < 5 || m.Completed+m.Failed != m.Triggered || m.InjectedFiles == 0 {
			t.Errorf("scale %s: %d triggered, %d completed, %d failed, %d state files; want at least 5 triggered, the counts adding up, files seen", m.Mode, m.Triggered, m.Completed, m.Failed, m.InjectedFiles)
		}
	}
	// Every injected failure declined a snapshot the engine counted
	// (snapshots abandoned because their task stopped count too).
	if cw.Failed < cw.InjectedFailures || cw.Weak == nil || cw.Weak.SnapshotsCompleted != cw.Completed {
		t.Errorf("scale weak: %d task snapshots failed for %d injected failures, accounting %+v; want at least one per injection, counted in WeakStats", cw.Failed, cw.InjectedFailures, cw.Weak)
	}
	if cw.Share <= ca.Share || cw.Share < 0.7 {
		t.Errorf("scale: weak task snapshots completed %.2f, aligned checkpoints %.2f; want weak above aligned and near %.2f", cw.Share, ca.Share, 1-pFail)
	}
	if want := math.Pow(1-pFail, tasks); math.Abs(rep.Scale.Pow-want) > 1e-9 || rep.Scale.SimGlobal == nil || math.Abs(*rep.Scale.SimGlobal-want) > 0.05 {
		t.Errorf("scale: pow %v, simulated %v; want %v and the simulation near it", rep.Scale.Pow, rep.Scale.SimGlobal, want)
	}

	// Cost: both sides measured.
	cn, cwk := mode(rep.Cost.Modes, modeNone), mode(rep.Cost.Modes, modeWeak)
	if cn.RecordsPerSec <= 0 || cwk.RecordsPerSec <= 0 || cn.Checkpoints != 0 || cwk.Checkpoints < 1 {
		t.Errorf("cost: none %.0f records/s with %d checkpoints, weak %.0f records/s with %d task snapshots; want rates, none without and weak with snapshots", cn.RecordsPerSec, cn.Checkpoints, cwk.RecordsPerSec, cwk.Checkpoints)
	}
	if math.Abs(rep.Cost.Cost-(1-cwk.RecordsPerSec/cn.RecordsPerSec)) > 1e-9 {
		t.Errorf("cost %v, but weak/none records/s are %v/%v", rep.Cost.Cost, cwk.RecordsPerSec, cn.RecordsPerSec)
	}
}

// TestRecFailureTimes: the failures fall after the first snapshots and
// before the end, in order.
func TestRecFailureTimes(t *testing.T) {
	o := weakOptions{duration: 10 * time.Second, interval: time.Second, failures: 5}
	got := recFailureTimes(o)
	want := []time.Duration{2 * time.Second, 3750 * time.Millisecond, 5500 * time.Millisecond, 7250 * time.Millisecond, 9 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("recFailureTimes = %v, want %v", got, want)
	}
	o.failures = 1
	if got := recFailureTimes(o); !slices.Equal(got, []time.Duration{2 * time.Second}) {
		t.Errorf("one failure at %v, want 2s", got)
	}
}

// TestSnapshotFailerRate: the draw fails about p of the state files
// named as checkpoints name them, and nothing else.
func TestSnapshotFailerRate(t *testing.T) {
	f := &snapshotFailer{p: 0.02, seed: 1}
	const n = 50_000
	for i := range n {
		_ = f.MaybeError(vfs.OpCreate, "/x/job/chk-"+strconv.Itoa(i/32+1)+"/count-85d94462-"+strconv.Itoa(i%32)+".keyed")
		if err := f.MaybeError(vfs.OpCreate, "/x/job/chk-"+strconv.Itoa(i)+"/_metadata"); err != nil {
			t.Fatalf("failed %v: only keyed state files fail", err)
		}
	}
	if got := float64(f.fails.Load()) / n; f.files.Load() != n || got < 0.017 || got > 0.023 {
		t.Errorf("failed %.4f of %d files, want about 0.02", got, f.files.Load())
	}
}
