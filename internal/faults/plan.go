package faults

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Plan says which failures to inject.
type Plan struct {
	// Failures is how many failures to inject.
	Failures int
	// Seed makes the schedule reproducible: the same plan always draws the
	// same thresholds and points.
	Seed int64
	// Span is the expected total progress of a failure-free run (e.g. the
	// number of source events); thresholds are drawn over (0, Span). With
	// Span < 2 every failure is armed by the first progress.
	Span int64
	// Points restricts where failures fire; empty means AllPoints.
	Points []Point
	// OnePerAttempt holds further failures after one fired until Release:
	// a runtime that calls Release when it starts the next attempt makes
	// each planned failure cause its own restart, instead of several
	// firing in the same failing attempt.
	OnePerAttempt bool
}

// Validate checks the plan; New panics on a plan that does not validate, so
// check plans built from user input first.
func (p Plan) Validate() error {
	if p.Failures < 0 {
		return fmt.Errorf("fault plan: %d failures: want >= 0", p.Failures)
	}
	for _, pt := range p.Points {
		if _, err := ParsePoint(string(pt)); err != nil {
			return fmt.Errorf("fault plan: %w", err)
		}
	}
	return nil
}

// planned is one scheduled failure.
type planned struct {
	n         int   // 1-based, in threshold order
	threshold int64 // armed once progress >= threshold
	point     Point
}

// schedule draws the plan's failures: thresholds uniformly over
// [1, Span-1], sorted, then a point for each in that order.
func (p Plan) schedule() []planned {
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x7765697266617574)) // second word: "weirfaut"
	points := p.Points
	if len(points) == 0 {
		points = AllPoints()
	}
	th := make([]int64, p.Failures)
	for k := range th {
		th[k] = 1
		if p.Span >= 2 {
			th[k] = 1 + rng.Int64N(p.Span-1)
		}
	}
	slices.Sort(th)
	out := make([]planned, p.Failures)
	for k := range out {
		out[k] = planned{n: k + 1, threshold: th[k], point: points[rng.IntN(len(points))]}
	}
	return out
}
