package watermark

import (
	"fmt"
	"github.com/weirstream/weir/internal/testutil/coretest"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// The kinds of a history entry of the reference model.
const (
	hAdd = iota
	hFinish
	hRecords
	hTick
	hEnd
)

type hev struct {
	kind int
	id   string
	ts   []int64
	now  int64
}

// refModel is the naive reference of Source: it keeps the whole history
// and recomputes every split's watermark and idleness from it at each
// tick, with none of Source's incremental state. Only what the subtask
// announced (its output and idle status) is carried from step to step:
// that is the protocol being checked.
type refModel struct {
	bound  int64
	idleMS int64
	hist   []hev
	out    int64
	idle   bool
	ended  bool
}

// f is the bounded out-of-orderness watermark of the largest timestamp,
// in exact arithmetic: max - bound - 1, at least MinWatermark.
func (r *refModel) f(maxTS int64, any bool) int64 {
	if !any {
		return MinWatermark
	}
	v := new(big.Int).Sub(big.NewInt(maxTS), big.NewInt(r.bound))
	v.Sub(v, big.NewInt(1))
	if v.Cmp(big.NewInt(math.MinInt64)) < 0 {
		return MinWatermark
	}
	return v.Int64()
}

// present returns the splits assigned and not finished after the first n
// history entries, each with the index of the add that started it.
func (r *refModel) present(n int) map[string]int {
	p := map[string]int{}
	for i, e := range r.hist[:n] {
		switch e.kind {
		case hAdd:
			p[e.id] = i
		case hFinish:
			delete(p, e.id)
		}
	}
	return p
}

type refSplit struct {
	wm   int64
	idle bool
}

// splits evaluates every present split at the tick that is the last
// history entry.
func (r *refModel) splits() map[string]refSplit {
	cur := len(r.hist) - 1
	now := r.hist[cur].now
	out := map[string]refSplit{}
	for id, added := range r.present(cur + 1) {
		maxTS, any := int64(math.MinInt64), false
		// anchor: now of the latest tick that saw activity since the
		// tick before it; the add itself is activity for the first tick.
		anchor, active := int64(0), true
		for _, e := range r.hist[added+1 : cur+1] {
			switch {
			case e.kind == hRecords && e.id == id && len(e.ts) > 0:
				active = true
				for _, t := range e.ts {
					if !any || t > maxTS {
						maxTS, any = t, true
					}
				}
			case e.kind == hTick:
				if active {
					anchor, active = e.now, false
				}
			}
		}
		out[id] = refSplit{
			wm:   r.f(maxTS, any),
			idle: r.idleMS > 0 && now-anchor >= r.idleMS,
		}
	}
	return out
}

// emptyIdle: the subtask has no split, and the first tick since the last
// add (or the start) that found none was at least the timeout ago.
func (r *refModel) emptyIdle() bool {
	cur := len(r.hist) - 1
	if r.idleMS == 0 || len(r.present(cur+1)) > 0 {
		return false
	}
	lastAdd := -1
	for i, e := range r.hist[:cur+1] {
		if e.kind == hAdd {
			lastAdd = i
		}
	}
	for i := lastAdd + 1; i <= cur; i++ {
		if r.hist[i].kind == hTick && len(r.present(i+1)) == 0 {
			return r.hist[cur].now-r.hist[i].now >= r.idleMS
		}
	}
	panic("unreachable: the current tick found no split")
}

// step appends e and returns the actions Source must return.
func (r *refModel) step(e hev) []Action {
	r.hist = append(r.hist, e)
	var acts []Action
	emit := func(w int64) {
		if r.idle {
			r.idle = false
			acts = append(acts, MarkActive{})
		}
		r.out = w
		acts = append(acts, Emit{TS: w})
	}
	switch e.kind {
	case hRecords:
		if len(e.ts) > 0 && r.idle {
			r.idle = false
			acts = append(acts, MarkActive{})
		}
	case hTick:
		if r.ended {
			break
		}
		sp := r.splits()
		lowest, anyActive := int64(math.MaxInt64), false
		for _, s := range sp {
			if !s.idle {
				anyActive = true
				lowest = min(lowest, s.wm)
			}
		}
		switch {
		case anyActive:
			if lowest > r.out {
				emit(lowest)
			}
		case r.idleMS > 0 && !r.idle && (len(sp) > 0 || r.emptyIdle()):
			r.idle = true
			acts = append(acts, MarkIdle{})
		}
	case hEnd:
		if !r.ended {
			r.ended = true
			if r.out < MaxWatermark {
				emit(MaxWatermark)
			}
		}
	}
	return acts
}

// TestGenRandom drives Sources with seeded random histories (splits added,
// read, finished and re-added, ticks, the end of input) and compares every
// result with the reference model, then checks the promised invariants on
// their own: the output never decreases; an emitted watermark is at most
// every active split's largest timestamp minus bound minus 1; idle and
// finished splits are ignored; the end emits MaxWatermark and nothing
// follows; MarkIdle and MarkActive alternate (through the reference).
// Replay one seed with go test ./internal/watermark -run TestGenRandom -seed=N.
func TestGenRandom(t *testing.T) {
	seen := coretest.Outcomes{}
	n := coretest.Seeds{First: 1, N: 400}.Run(t, func(seed uint64) {
		if !genRandomRun(t, seed, seen) {
			t.Fatalf("failed with -seed %d", seed)
		}
	})
	t.Logf("actions and cases seen: %v", seen)
	// The histories must reach every rule, or the comparison proves little.
	seen.Require(t, n, 20, "emit", "MarkIdle", "MarkActive", "max", "idle split skipped", "saturated")
}

func genRandomRun(t *testing.T, seed uint64, seen map[string]int) bool {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 12))
	bound := int64(rng.IntN(30))
	switch rng.IntN(10) {
	case 0:
		bound = 0
	case 1:
		bound = math.MaxInt64 - int64(rng.IntN(3))
	}
	idleMS := int64(0)
	if rng.IntN(4) > 0 {
		idleMS = 1 + int64(rng.IntN(400))
	}
	floor := MinWatermark
	if rng.IntN(4) == 0 {
		floor = int64(rng.IntN(200))
	}
	src, err := NewSource(SourceConfig{
		NewGenerator: func() Generator { return BoundedOutOfOrderness(bound) },
		IdleTimeout:  time.Duration(idleMS) * time.Millisecond,
	}, floor)
	if err != nil {
		t.Fatal(err)
	}
	ref := &refModel{bound: bound, idleMS: idleMS, out: floor}
	ids := []string{"a", "b", "c", "d"}[:1+rng.IntN(4)]
	present := map[string]bool{}
	var now int64
	base := int64(rng.IntN(300))
	if rng.IntN(8) == 0 {
		base = math.MinInt64 + int64(rng.IntN(50)) // near the bottom: saturation
	}
	last := floor
	for step := range 250 {
		id := ids[rng.IntN(len(ids))]
		var e hev
		switch r := rng.IntN(100); {
		case ref.ended:
			e = hev{kind: hTick, now: now}
		case r < 12:
			if present[id] {
				e = hev{kind: hFinish, id: id}
			} else {
				e = hev{kind: hAdd, id: id}
			}
		case r < 55:
			if !present[id] {
				e = hev{kind: hAdd, id: id}
				break
			}
			e = hev{kind: hRecords, id: id}
			for range rng.IntN(4) {
				e.ts = append(e.ts, base+int64(step)+int64(rng.IntN(40))-20)
			}
		case r < 99:
			now += int64(rng.IntN(150))
			e = hev{kind: hTick, now: now}
		default:
			e = hev{kind: hEnd}
		}
		var got []Action
		var maxOnly bool
		switch e.kind {
		case hAdd:
			src.AddSplit(e.id)
			present[e.id] = true
		case hFinish:
			src.FinishSplit(e.id)
			delete(present, e.id)
		case hRecords:
			// Half the batches go through RecordsMax: for Bounded the
			// same as the whole batch.
			if maxOnly = len(e.ts) > 0 && rng.IntN(2) == 0; maxOnly {
				m := e.ts[0]
				for _, v := range e.ts {
					m = max(m, v)
				}
				got = src.RecordsMax(e.id, m)
			} else {
				got = src.Records(e.id, e.ts)
			}
		case hTick:
			got = src.Tick(e.now)
		case hEnd:
			got = src.EndOfInput()
		}
		want := ref.step(e)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Logf("seed %d step %d %+v (max only %v): got %v, the reference %v", seed, step, e, maxOnly, got, want)
			return false
		}
		if src.Watermark() != ref.out || src.IsIdle() != ref.idle || src.Ended() != ref.ended {
			t.Logf("seed %d step %d: Source at %d idle %v ended %v, reference at %d idle %v ended %v",
				seed, step, src.Watermark(), src.IsIdle(), src.Ended(), ref.out, ref.idle, ref.ended)
			return false
		}
		if !genInvariants(t, seed, step, ref, got, &last) {
			return false
		}
		for _, a := range got {
			switch a := a.(type) {
			case Emit:
				seen["emit"]++
				if a.TS == MaxWatermark {
					seen["max"]++
				}
			case MarkIdle:
				seen["MarkIdle"]++
			case MarkActive:
				seen["MarkActive"]++
			}
		}
		if e.kind == hTick && !ref.ended {
			sp := ref.splits()
			idle, lowest := false, int64(math.MaxInt64)
			for _, s := range sp {
				if s.idle {
					idle = true
				} else {
					lowest = min(lowest, s.wm)
				}
			}
			// An idle split was left out and the minimum of the others moved the output.
			for _, a := range got {
				if _, ok := a.(Emit); ok && idle && lowest == src.Watermark() {
					seen["idle split skipped"]++
				}
			}
		}
		if e.kind == hRecords && len(e.ts) > 0 && e.ts[0] < math.MinInt64+bound+1 {
			seen["saturated"]++
		}
	}
	return true
}

// genInvariants checks the rules directly, so that a reference model that
// shares a mistake with Source still fails.
func genInvariants(t *testing.T, seed uint64, step int, ref *refModel, acts []Action, last *int64) bool {
	t.Helper()
	e := ref.hist[len(ref.hist)-1]
	for i, a := range acts {
		em, ok := a.(Emit)
		if !ok {
			continue
		}
		if em.TS <= *last {
			t.Logf("seed %d step %d: emitted %d after %d", seed, step, em.TS, *last)
			return false
		}
		*last = em.TS
		if i > 0 && acts[i-1] != (MarkActive{}) {
			t.Logf("seed %d step %d: %v before an emission", seed, step, acts[i-1])
			return false
		}
		if e.kind == hEnd {
			if em.TS != MaxWatermark {
				t.Logf("seed %d step %d: the end emitted %d", seed, step, em.TS)
				return false
			}
			continue
		}
		if e.kind != hTick {
			t.Logf("seed %d step %d: %+v emitted a watermark", seed, step, e)
			return false
		}
		// Bounded by every present, non-idle split's largest timestamp.
		for id, sp := range ref.splits() {
			if !sp.idle && em.TS > sp.wm {
				t.Logf("seed %d step %d: emitted %d beyond active split %s at %d", seed, step, em.TS, id, sp.wm)
				return false
			}
		}
	}
	if ref.ended && e.kind != hEnd && len(acts) > 0 {
		t.Logf("seed %d step %d: %v after the end", seed, step, acts)
		return false
	}
	return true
}
