package windows

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

type winKey struct{ account, start, end int64 }

// Expected is the output of a run without late events (O >= M): one line
// per window, computed naively from the events (every window each event
// falls into; sessions by sorting each account's times and splitting
// where two are more than GAP apart).
func Expected(o Options) []string {
	o.Defaults()
	agg := map[winKey]*acc{}
	add := func(k winKey, e Event) {
		a := agg[k]
		if a == nil {
			a = &acc{}
			agg[k] = a
		}
		a.Count++
		a.Sum += e.Amount
	}
	sessions := map[int64][]Event{}
	for i := int64(0); i < o.Events; i++ {
		e := EventAt(i, o)
		switch o.Window.Kind {
		case "tumble":
			s := e.TS - mod(e.TS, o.Window.Size)
			add(winKey{e.Account, s, s + o.Window.Size}, e)
		case "slide":
			last := e.TS - mod(e.TS, o.Window.Slide)
			for s := last; s > e.TS-o.Window.Size; s -= o.Window.Slide {
				add(winKey{e.Account, s, s + o.Window.Size}, e)
			}
		case "session":
			sessions[e.Account] = append(sessions[e.Account], e)
		}
	}
	for account, es := range sessions {
		slices.SortFunc(es, func(a, b Event) int { return int(a.TS - b.TS) })
		start, end := es[0].TS, es[0].TS+o.Window.Gap
		var cur acc
		for _, e := range es {
			if e.TS > end {
				// Windows [a, a+GAP) and [b, b+GAP) merge when they overlap
				// or touch: b <= a+GAP.
				agg[winKey{account, start, end}] = &acc{cur.Count, cur.Sum}
				start, cur = e.TS, acc{}
			}
			end = max(end, e.TS+o.Window.Gap)
			cur.Count++
			cur.Sum += e.Amount
		}
		agg[winKey{account, start, end}] = &acc{cur.Count, cur.Sum}
	}
	out := make([]string, 0, len(agg))
	for k, a := range agg {
		out = append(out, Line(k.account, k.start, k.end, a.Count, a.Sum))
	}
	sort.Strings(out)
	return out
}

func mod(a, b int64) int64 { return ((a % b) + b) % b }

// Verify checks a run's committed lines and late lines. With O >= M they
// must be exactly Expected, with no late events. Otherwise, for tumbling
// windows, every event must be either listed as late or counted in the
// last (largest) firing of its window, exactly once: each window's last
// count and sum equal those of its events not listed as late, no event is
// listed twice, and no firing names a window without events. Other
// windows with O < M cannot be checked in closed form (lateness depends on
// when watermarks are emitted).
func Verify(o Options, lines, late []string) error {
	o.Defaults()
	if o.OutOfOrderness >= o.MaxDisorder {
		if len(late) > 0 {
			return fmt.Errorf("%d late events (first %q), but with --out-of-orderness %d >= --max-disorder %d none can be late", len(late), late[0], o.OutOfOrderness, o.MaxDisorder)
		}
		return sameMultiset(Expected(o), lines)
	}
	if o.Window.Kind != "tumble" {
		return fmt.Errorf("--verify with --out-of-orderness %d < --max-disorder %d checks tumbling windows only (%s given)", o.OutOfOrderness, o.MaxDisorder, o.Window)
	}
	lateSet := map[int64]bool{}
	for _, l := range late {
		f := strings.Split(l, ",")
		if len(f) != 3 {
			return fmt.Errorf("late line %q: want i,account,ts", l)
		}
		i, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || i < 0 || i >= o.Events {
			return fmt.Errorf("late line %q: no such event", l)
		}
		if e := EventAt(i, o); LateLine(e) != l {
			return fmt.Errorf("late line %q: event %d is %q", l, i, LateLine(e))
		}
		if lateSet[i] {
			return fmt.Errorf("event %d listed as late twice", i)
		}
		lateSet[i] = true
	}
	want := map[winKey]*acc{}
	for i := int64(0); i < o.Events; i++ {
		if lateSet[i] {
			continue
		}
		e := EventAt(i, o)
		s := e.TS - mod(e.TS, o.Window.Size)
		k := winKey{e.Account, s, s + o.Window.Size}
		a := want[k]
		if a == nil {
			a = &acc{}
			want[k] = a
		}
		a.Count++
		a.Sum += e.Amount
	}
	last := map[winKey]acc{}
	for _, l := range lines {
		var k winKey
		var a acc
		if _, err := fmt.Sscanf(l, "%d,%d,%d,%d,%d", &k.account, &k.start, &k.end, &a.Count, &a.Sum); err != nil {
			return fmt.Errorf("line %q: want account,start,end,count,sum", l)
		}
		if prev, ok := last[k]; !ok || a.Count > prev.Count {
			last[k] = a
		}
	}
	for k, a := range want {
		got, ok := last[k]
		if !ok {
			return fmt.Errorf("window %v of account %d holds %d events not listed as late, but never fired", [2]int64{k.start, k.end}, k.account, a.Count)
		}
		if got != *a {
			return fmt.Errorf("window %v of account %d: last firing count %d sum %d, its events not listed as late: count %d sum %d", [2]int64{k.start, k.end}, k.account, got.Count, got.Sum, a.Count, a.Sum)
		}
	}
	for k := range last {
		if want[k] == nil {
			return fmt.Errorf("window %v of account %d fired, but all its events are listed as late", [2]int64{k.start, k.end}, k.account)
		}
	}
	return nil
}

// sameMultiset returns an error naming the first differences unless got
// holds exactly want's lines.
func sameMultiset(want, got []string) error {
	counts := map[string]int{}
	for _, l := range want {
		counts[l]++
	}
	for _, l := range got {
		counts[l]--
	}
	var missing, extra []string
	for l, c := range counts {
		if c > 0 {
			missing = append(missing, fmt.Sprintf("%q x%d", l, c))
		}
		if c < 0 {
			extra = append(extra, fmt.Sprintf("%q x%d", l, -c))
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return nil
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return fmt.Errorf("want %d lines, got %d; missing %d: %s; extra %d: %s", len(want), len(got), len(missing), first(missing), len(extra), first(extra))
}

func first(s []string) string {
	if len(s) > 5 {
		s = s[:5]
	}
	return strings.Join(s, ", ")
}
