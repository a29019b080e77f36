package watermark

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// scripted is a custom generator that returns the given periodic results
// in turn: what a user-defined generator may do (say nothing, regress).
type scripted struct {
	results []int64 // 0: none
	events  int
}

func (g *scripted) OnEvent(int64) { g.events++ }

func (g *scripted) OnPeriodicEmit() (int64, bool) {
	r := g.results[0]
	g.results = g.results[1:]
	return r, r != 0
}

// TestCustomGenerator: a period without a watermark keeps the split's
// previous one, a regressing one is ignored (it must not lower the split's
// part of the minimum), and Records calls OnEvent per timestamp while
// RecordsMax calls it once.
func TestCustomGenerator(t *testing.T) {
	a := &scripted{results: []int64{10, 0, 5, 0}}
	b := &scripted{results: []int64{8, 9, 0, 20}}
	gens := []*scripted{a, b}
	s, err := NewSource(SourceConfig{NewGenerator: func() Generator {
		g := gens[0]
		gens = gens[1:]
		return g
	}}, MinWatermark)
	if err != nil {
		t.Fatal(err)
	}
	s.AddSplit("a")
	s.AddSplit("b")
	var got []string
	for i := range 4 {
		got = append(got, fmt.Sprint(s.Tick(int64(i))))
	}
	// a holds 10 through its silent period and its regression to 5, so b
	// reaching 20 moves the output to 10.
	if want := "[{8}] [{9}] [] [{10}]"; strings.Join(got, " ") != want {
		t.Fatalf("ticks = %s, want %s", strings.Join(got, " "), want)
	}
	s.Records("a", []int64{1, 2, 3})
	s.RecordsMax("a", 9)
	if a.events != 4 {
		t.Fatalf("OnEvent called %d times, want 3 for Records and 1 for RecordsMax", a.events)
	}
}

// TestSubMillisecondIdleTimeout: a timeout below a millisecond rounds up
// to one, instead of truncating to 0 (which would turn idleness off).
func TestSubMillisecondIdleTimeout(t *testing.T) {
	s, err := NewSource(SourceConfig{NewGenerator: func() Generator { return Monotonous() }, IdleTimeout: 500 * time.Microsecond}, MinWatermark)
	if err != nil {
		t.Fatal(err)
	}
	s.Tick(0)
	if acts := s.Tick(1); len(acts) != 1 || acts[0] != (MarkIdle{}) {
		t.Fatalf("a subtask without splits 1 ms after the first tick with a 0.5 ms timeout: %v, want MarkIdle", acts)
	}
	s, _ = NewSource(SourceConfig{NewGenerator: func() Generator { return Monotonous() }, IdleTimeout: 1500 * time.Microsecond}, MinWatermark)
	s.Tick(0)
	if acts := s.Tick(1); len(acts) != 0 {
		t.Fatalf("1.5 ms timeout idle after 1 ms: %v", acts)
	}
	if acts := s.Tick(2); len(acts) != 1 {
		t.Fatalf("1.5 ms timeout not idle after 2 ms: %v", acts)
	}
}

func TestSourceConfigValidate(t *testing.T) {
	_, err := NewSource(SourceConfig{}, MinWatermark)
	if err == nil || !strings.Contains(err.Error(), "NewGenerator") {
		t.Fatalf("no generator: %v", err)
	}
}

// TestSourceHotPathAllocs: the per-batch calls and a tick that emits
// nothing do not allocate.
func TestSourceHotPathAllocs(t *testing.T) {
	s, err := NewSource(SourceConfig{NewGenerator: func() Generator { return BoundedOutOfOrderness(5) }, IdleTimeout: time.Second}, MinWatermark)
	if err != nil {
		t.Fatal(err)
	}
	s.AddSplit("a")
	s.AddSplit("b")
	batch := []int64{1, 5, 3}
	s.Records("a", batch)
	s.Tick(0)
	var now int64
	allocs := testing.AllocsPerRun(1000, func() {
		s.Records("a", batch)
		s.RecordsMax("b", 4)
		now++
		s.Tick(now)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch and tick, want 0", allocs)
	}
}

// ExampleSource is the walkthrough of the package doc.
func ExampleSource() {
	s, _ := NewSource(SourceConfig{
		NewGenerator: func() Generator { return BoundedOutOfOrderness(5) },
		IdleTimeout:  time.Second,
	}, MinWatermark)
	s.AddSplit("p0")
	s.AddSplit("p1")
	s.RecordsMax("p0", 100)
	s.Records("p1", []int64{7, 9})
	fmt.Print(actions(s.Tick(0)))
	s.FinishSplit("p1")
	fmt.Print(actions(s.Tick(200)))
	fmt.Print(actions(s.Tick(1200))) // p0 quiet since the tick at 200
	fmt.Print(actions(s.RecordsMax("p0", 101)))
	fmt.Print(actions(s.EndOfInput()))
	// Output:
	// emit 3
	// emit 94
	// MarkIdle
	// MarkActive
	// emit max
}
