package faults

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestScheduleIsDeterministicSortedAndInRange(t *testing.T) {
	p := Plan{Failures: 50, Seed: 11, Span: 1000, Points: []Point{Commit, Process}}
	a, b := p.schedule(), p.schedule()
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("same plan, different schedules")
	}
	p2 := p
	p2.Seed = 12
	if fmt.Sprint(a) == fmt.Sprint(p2.schedule()) {
		t.Fatal("different seeds, same schedule")
	}
	counts := map[Point]int{}
	for k, f := range a {
		if f.n != k+1 || f.threshold < 1 || f.threshold > 999 || (k > 0 && f.threshold < a[k-1].threshold) {
			t.Errorf("planned[%d] = %+v: want n=%d, threshold in [1,999], sorted", k, f, k+1)
		}
		counts[f.point]++
	}
	if len(counts) != 2 || counts[Commit]+counts[Process] != 50 || counts[Commit] < 10 || counts[Process] < 10 {
		t.Errorf("points drawn %v: want only commit and process, both well represented", counts)
	}
	for _, f := range (Plan{Failures: 3, Span: 1}).schedule() {
		if f.threshold != 1 {
			t.Errorf("Span 1: planned %+v; want threshold 1", f)
		}
	}
}

func TestExactFailuresFireGivenEnoughProgress(t *testing.T) {
	plan := Plan{Failures: 7, Seed: 3, Span: 10_000}
	inj := New(plan)
	sched := plan.schedule()
	var got []*InjectedError
	for range 2 * plan.Span / 10 { // twice the span: replays after restarts count too
		inj.Progress(10)
		for _, p := range AllPoints() {
			if err := inj.Hit(p); err != nil {
				var ie *InjectedError
				if !errors.As(err, &ie) || !errors.Is(err, ErrInjected) {
					t.Fatalf("Hit returned %T %v; want *InjectedError matching ErrInjected", err, err)
				}
				if ie.Point != p {
					t.Errorf("Hit(%s) fired failure planned at %s", p, ie.Point)
				}
				got = append(got, ie)
			}
		}
	}
	if len(got) != plan.Failures || inj.Fired() != plan.Failures || inj.Remaining() != 0 {
		t.Fatalf("fired %d (Fired()=%d, Remaining()=%d); want %d", len(got), inj.Fired(), inj.Remaining(), plan.Failures)
	}
	log := inj.Log()
	for k, f := range log {
		s := sched[f.N-1]
		if f.Point != s.point || f.Threshold != s.threshold || f.Progress < s.threshold || f.Progress >= s.threshold+10 || got[k].N != f.N {
			t.Errorf("log[%d] = %v; planned %+v (fires within the batch that crosses its threshold)", k, f, s)
		}
	}
	ns := make([]int, len(log))
	for k, f := range log {
		ns[k] = f.N
	}
	slices.Sort(ns)
	if fmt.Sprint(ns) != "[1 2 3 4 5 6 7]" {
		t.Errorf("fired failures %v; want each of 1..7 once", ns)
	}
}

func TestFiresOnlyAtItsPointAndNotBeforeItsThreshold(t *testing.T) {
	plan := Plan{Failures: 3, Seed: 5, Span: 100, Points: []Point{AfterPreCommit}}
	inj := New(plan)
	first := plan.schedule()[0].threshold
	inj.Progress(first - 1)
	for _, p := range AllPoints() {
		if err := inj.Hit(p); err != nil {
			t.Fatalf("fired before its threshold: %v", err)
		}
	}
	inj.Progress(1000) // arms all three at once
	for range 100 {
		for _, p := range []Point{Process, SnapshotSync, SnapshotAsync, Commit, "no-such-point"} {
			if err := inj.Hit(p); err != nil {
				t.Fatalf("Hit(%s) fired %v; all failures are planned at after-precommit", p, err)
			}
		}
	}
	var msgs []string
	for range 5 {
		if err := inj.Hit(AfterPreCommit); err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	want := "[injected failure 1 at after-precommit injected failure 2 at after-precommit injected failure 3 at after-precommit]"
	if fmt.Sprint(msgs) != want {
		t.Errorf("fired %v; want %s", msgs, want)
	}
}

func TestConcurrentHitAndProgressFireEachOnce(t *testing.T) {
	const workers, failures = 8, 40
	plan := Plan{Failures: failures, Seed: 99, Span: 20_000}
	inj := New(plan)
	var mu sync.Mutex
	var fired []int
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			points := AllPoints()
			for step := 0; step < 2*int(plan.Span)/workers; step++ {
				inj.Progress(1)
				p := points[(step+w)%len(points)]
				if err := inj.Hit(p); err != nil {
					var ie *InjectedError
					if !errors.As(err, &ie) || ie.Point != p {
						t.Errorf("Hit(%s) returned %v", p, err)
						return
					}
					mu.Lock()
					fired = append(fired, ie.N)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	// Every worker kept hitting every point after the span was passed, so
	// every failure fired; the lock makes each fire exactly once.
	slices.Sort(fired)
	want := make([]int, failures)
	for k := range want {
		want[k] = k + 1
	}
	if fmt.Sprint(fired) != fmt.Sprint(want) {
		t.Errorf("fired %v; want each of 1..%d exactly once", fired, failures)
	}
	if inj.Fired() != failures || inj.Remaining() != 0 || len(inj.Log()) != failures {
		t.Errorf("Fired()=%d Remaining()=%d len(Log())=%d", inj.Fired(), inj.Remaining(), len(inj.Log()))
	}
}

func TestNilInjectorNeverFires(t *testing.T) {
	var inj *Injector
	inj.Progress(1 << 40)
	for _, p := range AllPoints() {
		if err := inj.Hit(p); err != nil {
			t.Fatal(err)
		}
	}
	if inj.Fired() != 0 || inj.Remaining() != 0 || inj.Log() != nil {
		t.Fatal("nil injector reports failures")
	}
}

func TestZeroFailuresNeverFires(t *testing.T) {
	inj := New(Plan{Seed: 1, Span: 10})
	inj.Progress(100)
	for _, p := range AllPoints() {
		if err := inj.Hit(p); err != nil {
			t.Fatal(err)
		}
	}
	if inj.Fired() != 0 || inj.Remaining() != 0 {
		t.Fatal("empty plan fired")
	}
}

func TestPlanValidateAndParsePoint(t *testing.T) {
	cases := []struct {
		plan Plan
		want string
	}{
		{Plan{Failures: -1}, "fault plan: -1 failures: want >= 0"},
		{Plan{Failures: 1, Points: []Point{"crash"}}, `fault plan: unknown fault point "crash": want one of process-record, snapshot-sync, snapshot-async, after-precommit, commit, channel-state`},
	}
	for _, tc := range cases {
		if err := tc.plan.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("Validate(%+v) = %v; want %s", tc.plan, err, tc.want)
		}
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("New(%+v) did not panic", tc.plan)
				}
			}()
			New(tc.plan)
		}()
	}
	for _, p := range AllPoints() {
		if got, err := ParsePoint(" " + string(p)); err != nil || got != p {
			t.Errorf("ParsePoint(%s) = %v, %v", p, got, err)
		}
	}
}

func BenchmarkHitNothingArmed(b *testing.B) {
	inj := New(Plan{Failures: 1, Seed: 1, Span: 1 << 62})
	for b.Loop() {
		if inj.Hit(Process) != nil {
			b.Fatal("fired")
		}
	}
}

func TestOnePerAttemptHoldsUntilRelease(t *testing.T) {
	inj := New(Plan{Failures: 3, Seed: 7, Span: 10, Points: []Point{Process}, OnePerAttempt: true})
	inj.Progress(100) // arms all three
	if inj.Hit(Process) == nil {
		t.Fatal("first armed failure did not fire")
	}
	for k := 0; k < 5; k++ {
		if err := inj.Hit(Process); err != nil {
			t.Fatalf("fired %v while held", err)
		}
	}
	inj.Release()
	if inj.Hit(Process) == nil {
		t.Fatal("second failure did not fire after Release")
	}
	if inj.Hit(Process) != nil {
		t.Fatal("fired again without Release")
	}
	inj.Release()
	if inj.Hit(Process) == nil || inj.Fired() != 3 || inj.Remaining() != 0 {
		t.Fatalf("fired %d, remaining %d; want 3, 0", inj.Fired(), inj.Remaining())
	}
}
