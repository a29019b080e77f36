package window

import (
	"flag"
	"fmt"
	"github.com/weirstream/weir/internal/testutil/coretest"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// seedsFlag widens or narrows TestRandomAgainstReference's range of seeds;
// -seed runs one, verbosely.
var seedsFlag = flag.Int("seeds", 400, "number of seeds TestRandomAgainstReference runs")

// TestRandomAgainstReference runs the keyed operator simulation (the core
// as the operator uses it) on seeded random records and non-decreasing
// watermarks, and compares what it emits at each step (firings with their
// count and sum, late records) with a naive reference that recomputes
// from scratch: windows by enumerating starts, sessions by sorting a key's
// records and splitting on gaps larger than the gap, lateness by the
// definition. At the end of input both must have fired everything and the
// operator must keep no state and no timer.
func TestRandomAgainstReference(t *testing.T) {
	coretest.Seeds{N: *seedsFlag}.Run(t, func(seed uint64) { runRandom(t, seed, coretest.Single()) })
}

func runRandom(t *testing.T, seed uint64, verbose bool) {
	rng := rand.New(rand.NewPCG(seed, 12))
	var a Assigner
	var err error
	switch rng.IntN(3) {
	case 0:
		size := 1 + rng.Int64N(20)
		a, err = NewTumbling(EventTime, size, rng.Int64N(2*size-1)-(size-1))
	case 1:
		size, slide := 1+rng.Int64N(20), 1+rng.Int64N(12)
		a, err = NewSliding(EventTime, size, slide, rng.Int64N(2*slide-1)-(slide-1))
	default:
		a, err = NewSession(EventTime, 1+rng.Int64N(10))
	}
	if err != nil {
		t.Fatal(err)
	}
	lateness := int64(0)
	if rng.IntN(2) == 0 {
		lateness = rng.Int64N(15)
	}
	r, err := NewRules(a, Trigger{}, lateness)
	if err != nil {
		t.Fatal(err)
	}
	s := newSim(r)
	ref := newReference(r)
	if verbose {
		t.Logf("seed %d: %s lateness %d", seed, a, lateness)
	}
	wm := int64(-50)
	keys := 1 + rng.IntN(3)
	steps := 20 + rng.IntN(200)
	for step := range steps + 1 {
		var op string
		s.out = s.out[:0]
		switch {
		case step == steps:
			op = "end"
			s.advance(EventTime, math.MaxInt64)
			ref.advance(math.MaxInt64)
		case rng.IntN(4) == 0:
			wm += rng.Int64N(12)
			op = fmt.Sprintf("wm %d", wm)
			s.advance(EventTime, wm)
			ref.advance(wm)
		default:
			k := string(rune('a' + rng.IntN(keys)))
			// Around the watermark, so records are on time, late within
			// lateness and beyond it.
			ts := wm + rng.Int64N(40) - 25
			v := 1 + rng.Int64N(9)
			op = fmt.Sprintf("e %s %d %d", k, ts, v)
			if err := s.element(step, k, ts, v); err != nil {
				t.Fatal(err)
			}
			ref.element(step, k, ts, v)
		}
		var got []string
		for _, l := range s.out {
			if !strings.HasPrefix(l, "merge") {
				got = append(got, l)
			}
		}
		slices.Sort(got)
		want := ref.out
		slices.Sort(want)
		ref.out = ref.out[:0]
		if verbose {
			t.Logf("step %d: %s -> %v", step, op, got)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d (%s, lateness %d) step %d %s:\n got  %q\n want %q\n(rerun with -seed %d for the whole run)", seed, a, lateness, step, op, got, want, seed)
		}
	}
	if st := s.state(); st != "(empty)\n" {
		t.Fatalf("seed %d: after end of input the operator keeps:\n%s", seed, st)
	}
}

// reference is the naive model: it keeps every record it accepted and
// recomputes windows and sessions each time it is asked.
type reference struct {
	r  Rules
	wm int64
	// recs are the accepted records of live windows.
	recs []refRec
	out  []string
}

type refRec struct {
	k     string
	ts, v int64
	w     Window // tumbling, sliding: the window the record was added to
}

func newReference(r Rules) *reference { return &reference{r: r, wm: math.MinInt64} }

func floorMod(a, m int64) int64 { return ((a % m) + m) % m }

// windows enumerates every candidate start near ts.
func (f *reference) windows(ts int64) []Window {
	a := f.r.Assigner()
	var ws []Window
	for s := ts - a.Size() - a.Slide(); s <= ts; s++ {
		if floorMod(s-a.Offset(), a.Slide()) == 0 && s <= ts && ts < s+a.Size() {
			ws = append(ws, Window{s, s + a.Size()})
		}
	}
	return ws
}

// late reports whether window w is late at watermark wm, by definition:
// its last millisecond plus the lateness is not after the watermark.
func (f *reference) late(w Window, wm int64) bool {
	if wm == math.MaxInt64 {
		return true
	}
	return w.End-1+f.r.AllowedLateness() <= wm
}

func (f *reference) fire(k string, w Window, recs []refRec) {
	var n, sum int64
	for _, r := range recs {
		n++
		sum += r.v
	}
	f.out = append(f.out, fmt.Sprintf("fire k=%s %v count=%d sum=%d", k, w, n, sum))
}

// sessions splits key k's records (plus extra, if given) into sessions.
func (f *reference) sessions(k string, extra *refRec) (ws []Window, members [][]refRec) {
	var rs []refRec
	for _, r := range f.recs {
		if r.k == k {
			rs = append(rs, r)
		}
	}
	if extra != nil {
		rs = append(rs, *extra)
	}
	slices.SortStableFunc(rs, func(a, b refRec) int { return int(a.ts - b.ts) })
	gap := f.r.Assigner().Size()
	for i, r := range rs {
		if i == 0 || r.ts-rs[i-1].ts > gap {
			ws = append(ws, Window{r.ts, r.ts + gap})
			members = append(members, nil)
		}
		last := len(ws) - 1
		ws[last].End = r.ts + gap
		members[last] = append(members[last], r)
	}
	return ws, members
}

func (f *reference) in(k string, w Window) []refRec {
	var rs []refRec
	for _, r := range f.recs {
		if r.k == k && r.w == w {
			rs = append(rs, r)
		}
	}
	return rs
}

func (f *reference) element(i int, k string, ts, v int64) {
	added := false
	if f.r.Assigner().Merging() {
		e := refRec{k: k, ts: ts, v: v}
		ws, members := f.sessions(k, &e)
		for j, w := range ws {
			if !slices.Contains(members[j], e) || f.late(w, f.wm) {
				continue
			}
			added = true
			f.recs = append(f.recs, e)
			if w.End-1 <= f.wm {
				f.fire(k, w, members[j])
			}
		}
	} else {
		for _, w := range f.windows(ts) {
			if f.late(w, f.wm) {
				continue
			}
			added = true
			f.recs = append(f.recs, refRec{k: k, ts: ts, v: v, w: w})
			if w.End-1 <= f.wm {
				f.fire(k, w, f.in(k, w))
			}
		}
	}
	if !added && ts+f.r.AllowedLateness() <= f.wm {
		f.out = append(f.out, fmt.Sprintf("late i=%d k=%s ts=%d", i, k, ts))
	}
}

func (f *reference) advance(wm int64) {
	if wm <= f.wm {
		return
	}
	old := f.wm
	f.wm = wm
	fires := func(w Window) bool { return w.End-1 > old && w.End-1 <= wm }
	var keys []string
	for _, r := range f.recs {
		if !slices.Contains(keys, r.k) {
			keys = append(keys, r.k)
		}
	}
	var live []refRec
	for _, k := range keys {
		if f.r.Assigner().Merging() {
			ws, members := f.sessions(k, nil)
			for j, w := range ws {
				if fires(w) {
					f.fire(k, w, members[j])
				}
				if !f.late(w, wm) {
					live = append(live, members[j]...)
				}
			}
			continue
		}
		var seen []Window
		for _, r := range f.recs {
			if r.k != k || slices.Contains(seen, r.w) {
				continue
			}
			seen = append(seen, r.w)
			if fires(r.w) {
				f.fire(k, r.w, f.in(k, r.w))
			}
			if !f.late(r.w, wm) {
				live = append(live, f.in(k, r.w)...)
			}
		}
	}
	f.recs = live
}

// TestRandomMergingSet adds and removes random windows and checks the set
// against a naive one that merges by repeated pairwise scans, and what a
// state window must be: unique, inside its window, kept by a merge from
// one of the merged windows, and surviving an encoding round trip.
func TestRandomMergingSet(t *testing.T) {
	coretest.Seeds{N: 300}.Run(t, func(seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var s MergingSet
		var naive []Window
		for step := range 100 {
			before := map[Window]Window{}
			for w, sw := range s.All() {
				before[w] = sw
			}
			if rng.IntN(6) == 0 && len(naive) > 0 {
				w := naive[rng.IntN(len(naive))]
				if !s.Remove(w) {
					t.Fatalf("seed %d step %d: Remove(%v) of a held window = false", seed, step, w)
				}
				naive = slices.DeleteFunc(naive, func(x Window) bool { return x == w })
			} else {
				start := rng.Int64N(200) - 100
				w := Window{start, start + 1 + rng.Int64N(10)}
				m := s.Add(w)
				naive = append(naive, w)
				for merged := true; merged; {
					merged = false
					for i := 0; i < len(naive) && !merged; i++ {
						for j := i + 1; j < len(naive); j++ {
							if naive[i].Intersects(naive[j]) {
								naive[i] = naive[i].Cover(naive[j])
								naive = slices.Delete(naive, j, j+1)
								merged = true
								break
							}
						}
					}
				}
				if !m.Result.Intersects(w) || m.Result.Cover(w) != m.Result {
					t.Fatalf("seed %d step %d: Add(%v) result %v does not hold it", seed, step, w, m.Result)
				}
				wasState := false
				for _, sw := range before {
					wasState = wasState || sw == m.StateWindow
				}
				if len(m.Windows) > 0 && !wasState {
					t.Fatalf("seed %d step %d: merge %+v took a new state window", seed, step, m)
				}
				for _, x := range m.Windows {
					if _, ok := before[x]; !ok {
						t.Fatalf("seed %d step %d: merged %v was not held", seed, step, x)
					}
				}
				if len(m.Windows) > 0 && len(m.StateWindows) != len(m.Windows)-1 {
					t.Fatalf("seed %d step %d: %d windows merged but %d state windows move", seed, step, len(m.Windows), len(m.StateWindows))
				}
			}
			slices.SortFunc(naive, func(a, b Window) int { return int(a.Start - b.Start) })
			var got []Window
			states := map[Window]bool{}
			for w, sw := range s.All() {
				got = append(got, w)
				if states[sw] || sw.Cover(w) != w {
					t.Fatalf("seed %d step %d: state window %v of %v is shared or outside it", seed, step, sw, w)
				}
				states[sw] = true
			}
			if !slices.Equal(got, naive) {
				t.Fatalf("seed %d step %d: set %v, naive %v", seed, step, got, naive)
			}
			var back MergingSet
			if err := back.Decode(s.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(maps.Collect(back.All()), maps.Collect(s.All())) {
				t.Fatalf("seed %d step %d: round trip changed the set", seed, step)
			}
		}
	})
}
