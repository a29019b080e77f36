package window

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// sim is a whole keyed window operator over in-memory maps, written the
// way the root package's operator uses the core (doc.go): the tests drive
// it by script and against a naive reference.
type sim struct {
	r   Rules
	wm  int64 // event time
	now int64 // processing time
	// acc holds the contents and trigger state per key and state window.
	acc map[stateKey]*acc
	// sets are the merging sets per key, kept encoded as the operator keeps
	// them in keyed state, and decoded per use.
	sets   map[string][]byte
	timers map[timerKey]struct{}
	buf    []Window
	set    MergingSet
	out    []string
}

type stateKey struct {
	k string
	w Window
}

type timerKey struct {
	k string
	w Window
	t Timer
}

type acc struct {
	n, sum, count int64
}

func newSim(r Rules) *sim {
	return &sim{r: r, wm: math.MinInt64, acc: map[stateKey]*acc{}, sets: map[string][]byte{}, timers: map[timerKey]struct{}{}}
}

func (s *sim) emit(format string, args ...any) { s.out = append(s.out, fmt.Sprintf(format, args...)) }

func (s *sim) loadSet(k string) {
	if err := s.set.Decode(s.sets[k]); err != nil && s.sets[k] != nil {
		panic(err)
	}
}

func (s *sim) storeSet(k string) {
	if s.set.Len() == 0 {
		delete(s.sets, k)
		return
	}
	s.sets[k] = s.set.AppendTo(s.sets[k][:0])
}

func (s *sim) accOf(k string, sw Window) *acc {
	a := s.acc[stateKey{k, sw}]
	if a == nil {
		a = &acc{}
		s.acc[stateKey{k, sw}] = a
	}
	return a
}

// element is the record i of key k at ts (event time; for processing time
// the assigner is given s.now) with value v.
func (s *sim) element(i int, k string, ts, v int64) error {
	at := ts
	if !s.r.Assigner().IsEventTime() {
		at = s.now
	}
	ws, err := s.r.Assigner().AppendWindows(s.buf[:0], at)
	s.buf = ws
	if err != nil {
		return err
	}
	merging := s.r.Assigner().Merging()
	if merging {
		s.loadSet(k)
	}
	added := false
	for _, w := range ws {
		sw := w
		if merging {
			m := s.set.Add(w)
			for _, st := range m.StateWindows {
				from := s.acc[stateKey{k, st}]
				if from == nil {
					panic(fmt.Sprintf("no state for state window %v", st))
				}
				to := s.accOf(k, m.StateWindow)
				to.n, to.sum, to.count = to.n+from.n, to.sum+from.sum, to.count+from.count
				delete(s.acc, stateKey{k, st})
			}
			for _, x := range m.Windows {
				s.deleteTimers(k, x)
			}
			if len(m.Windows) > 0 {
				s.emit("merge k=%s %v into %v (state %v)", k, m.Windows, m.Result, m.StateWindow)
			}
			w, sw = m.Result, m.StateWindow
		}
		a := s.accOf(k, sw)
		d := s.r.OnElement(w, a.count, s.wm)
		if d.Skip {
			if merging {
				s.set.Remove(w)
			}
			if a.n == 0 {
				delete(s.acc, stateKey{k, sw})
			}
			continue
		}
		added = true
		a.n++
		a.sum += v
		s.perform(k, w, sw, d, merging)
	}
	if merging {
		s.storeSet(k)
	}
	if !added && s.r.IsElementLate(ts, s.wm) {
		s.emit("late i=%d k=%s ts=%d", i, k, ts)
	}
	return nil
}

func (s *sim) deleteTimers(k string, w Window) {
	ts := s.r.Timers(w)
	for _, t := range ts.T[:ts.N] {
		delete(s.timers, timerKey{k, w, t})
	}
}

// perform does d for window w of key k with state window sw; the merging
// set of k is loaded in s.set if merging.
func (s *sim) perform(k string, w, sw Window, d Decision, merging bool) {
	a := s.accOf(k, sw)
	a.count = d.Count
	for _, t := range d.Register.T[:d.Register.N] {
		s.timers[timerKey{k, w, t}] = struct{}{}
	}
	if d.Fire && a.n > 0 {
		s.emit("fire k=%s %v count=%d sum=%d", k, w, a.n, a.sum)
	}
	if d.Purge {
		a.n, a.sum = 0, 0
	}
	if d.Clear {
		delete(s.acc, stateKey{k, sw})
		s.deleteTimers(k, w)
		if merging {
			s.set.Remove(w)
		}
	}
}

// advance moves the clock of domain dom to t and fires its due timers in
// order of time (then key and window, for a deterministic script).
func (s *sim) advance(dom Domain, t int64) {
	if dom == EventTime {
		if t <= s.wm {
			return
		}
		s.wm = t
	} else {
		s.now = max(s.now, t)
		t = s.now
	}
	for {
		var due []timerKey
		for tk := range s.timers {
			if tk.t.Domain == dom && tk.t.TS <= t {
				due = append(due, tk)
			}
		}
		if len(due) == 0 {
			return
		}
		tk := slices.MinFunc(due, func(a, b timerKey) int {
			return cmp.Or(cmp.Compare(a.t.TS, b.t.TS), strings.Compare(a.k, b.k), cmp.Compare(a.w.Start, b.w.Start), cmp.Compare(a.w.End, b.w.End))
		})
		delete(s.timers, tk)
		s.timer(tk)
	}
}

func (s *sim) timer(tk timerKey) {
	merging := s.r.Assigner().Merging()
	sw := tk.w
	if merging {
		s.loadSet(tk.k)
		var ok bool
		if sw, ok = s.set.StateWindow(tk.w); !ok {
			panic(fmt.Sprintf("timer %v of key %s for window %v not held: its timers should have been deleted", tk.t, tk.k, tk.w))
		}
	}
	a := s.acc[stateKey{tk.k, sw}]
	if a == nil {
		panic(fmt.Sprintf("timer %v of key %s for window %v without state: the window was cleared but kept a timer", tk.t, tk.k, tk.w))
	}
	s.perform(tk.k, tk.w, sw, s.r.OnTimer(tk.w, tk.t, a.count), merging)
	if merging {
		s.storeSet(tk.k)
	}
}

// state describes what the operator still keeps.
func (s *sim) state() string {
	var b strings.Builder
	keys := slices.SortedFunc(maps.Keys(s.acc), func(a, b stateKey) int {
		return cmp.Or(strings.Compare(a.k, b.k), cmp.Compare(a.w.Start, b.w.Start))
	})
	for _, sk := range keys {
		a := s.acc[sk]
		fmt.Fprintf(&b, "state k=%s %v count=%d sum=%d trigger=%d\n", sk.k, sk.w, a.n, a.sum, a.count)
	}
	for _, k := range slices.Sorted(maps.Keys(s.sets)) {
		s.loadSet(k)
		fmt.Fprintf(&b, "set k=%s:", k)
		for w, sw := range s.set.All() {
			fmt.Fprintf(&b, " %v(state %v)", w, sw)
		}
		b.WriteString("\n")
	}
	tks := slices.SortedFunc(maps.Keys(s.timers), func(a, b timerKey) int {
		return cmp.Or(cmp.Compare(a.t.Domain, b.t.Domain), cmp.Compare(a.t.TS, b.t.TS), strings.Compare(a.k, b.k), cmp.Compare(a.w.Start, b.w.Start))
	})
	for _, tk := range tks {
		fmt.Fprintf(&b, "timer k=%s %v %v\n", tk.k, tk.w, tk.t)
	}
	if b.Len() == 0 {
		return "(empty)\n"
	}
	return b.String()
}
