package weir

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/weirstream/weir/internal/window"
)

// windowFns are what a window function does to its accumulator: fold a
// record in (first: the window holds nothing yet), merge two (sessions),
// and emit the results when the window fires.
type windowFns[K comparable, T, ACC, R any] struct {
	add   func(v T, acc ACC, first bool) ACC
	merge func(a, b ACC) ACC
	emit  func(key K, wc *WindowContext, acc ACC, out *Collector[R]) error
}

// winEntry is one window's state: its accumulator, its number of records
// (0: nothing to fire), and its trigger state (records since the last
// count firing).
type winEntry[ACC any] struct {
	Acc   ACC
	N     int64
	Count int64
}

// windowed adds the window operator: a KeyedProcess whose function keeps
// each window's accumulator in keyed map state (keyed by window) and its
// timers in the keyed timer service, so windows are checkpointed,
// restored and rescaled like any keyed state, on either backend.
func windowed[K comparable, T, ACC, R any](w WindowedStream[K, T], name string, newFns func() windowFns[K, T, ACC, R]) Stream[R] {
	r, err := w.rules(name)
	if err != nil {
		w.k.s.env.fail(err)
	}
	late := w.lateTag
	s := Process(w.k, func() KeyedProcessFunction[K, T, R] {
		return &windowFunc[K, T, ACC, R]{rules: r, fns: newFns(), lateTag: OutputTag[T]{id: late}}
	})
	s.node.Name = name
	// The window operator owns its states: declared, a restore checks
	// them (and the accumulator type) before anything is deployed.
	decls := []StateDecl{MapStateOf[window.Window, winEntry[ACC]]("window-contents")}
	if err == nil && r.Assigner().Merging() {
		decls = append(decls, ValueStateOf[[]byte]("window-set"))
	}
	return s.Declare(decls...)
}

// windowFunc is the window operator's function, driven by the decisions
// of the window core (internal/window): the core says what to fire, clear
// and register; this stores it.
type windowFunc[K comparable, T, ACC, R any] struct {
	rules    window.Rules
	fns      windowFns[K, T, ACC, R]
	lateTag  OutputTag[T]
	contents MapState[window.Window, winEntry[ACC]]
	sets     ValueState[[]byte] // merging assigners: the key's MergingSet
	set      window.MergingSet
	merging  bool
	ws       []window.Window
	due      []dueWindow
	wc       WindowContext
	name     string
	late     *atomic.Int64 // numLateRecordsDropped; nil in bare tests
	// From rules, once: the per-record path reads them as fields.
	assigner  window.Assigner
	eventTime bool
	// fastPath: the event-time trigger, whose decision for a record of a
	// window that has records and whose end the watermark has not passed
	// is "add, nothing else" — the common case, decided without the rules.
	fastPath bool
}

type dueWindow struct{ w, sw window.Window }

func (f *windowFunc[K, T, ACC, R]) Open(_ context.Context, kc *KeyedContext[K]) error {
	var err error
	if f.contents, err = GetMapState[window.Window, winEntry[ACC]](kc, "window-contents"); err != nil {
		return err
	}
	f.assigner = f.rules.Assigner()
	f.eventTime = f.assigner.IsEventTime()
	f.merging = f.assigner.Merging()
	f.fastPath = f.eventTime && !f.merging && f.rules.Trigger().Kind() == window.EventTimeTrigger
	if f.merging {
		if f.sets, err = GetValueState[[]byte](kc, "window-set"); err != nil {
			return err
		}
	}
	f.name = kc.oc.Name
	f.wc.now = kc.oc.Now
	f.late = kc.oc.LateRecordsDropped
	return nil
}

func (f *windowFunc[K, T, ACC, R]) loadSet() error {
	b, ok := f.sets.Value()
	if !ok {
		f.set.Reset()
		return nil
	}
	if err := f.set.Decode(b); err != nil {
		return fmt.Errorf("window operator %q: the merging windows of a key: %w", f.name, err)
	}
	return nil
}

func (f *windowFunc[K, T, ACC, R]) storeSet() {
	if f.set.Len() == 0 {
		f.sets.Clear()
		return
	}
	b, _ := f.sets.Value()
	f.sets.Update(f.set.AppendTo(b[:0:0]))
}

func (f *windowFunc[K, T, ACC, R]) ProcessElement(v T, kc *KeyedContext[K], out *Collector[R]) error {
	ts, ok := kc.Timestamp()
	at := ts
	if !f.eventTime {
		at = kc.CurrentProcessingTime()
	} else if !ok {
		return fmt.Errorf("window operator %q: record %v has no timestamp: event-time windows need a WatermarkStrategy upstream that assigns every record one", f.name, v)
	}
	ws, err := f.assigner.AppendWindows(f.ws[:0], at)
	f.ws = ws
	if err != nil {
		return fmt.Errorf("window operator %q: record %v: %w", f.name, v, err)
	}
	wm := kc.CurrentWatermark()
	if f.merging {
		if err := f.loadSet(); err != nil {
			return err
		}
	}
	added := false
	for _, w := range ws {
		sw := w
		if f.merging {
			m := f.set.Add(w)
			f.mergeState(kc, m)
			w, sw = m.Result, m.StateWindow
		}
		e, _ := f.contents.Get(sw)
		if f.fastPath && e.N > 0 && w.MaxTimestamp() > wm {
			added = true
			e.Acc = f.fns.add(v, e.Acc, false)
			e.N++
			f.contents.Put(sw, e)
			continue
		}
		d := f.rules.OnElement(w, e.Count, wm)
		if d.Skip {
			if f.merging {
				f.set.Remove(w)
			}
			continue
		}
		added = true
		if e.N > 0 && !f.merging {
			// The window had records, so its timers are registered (a
			// merged window's are not: it grew).
			d.Register = window.Timers{}
		}
		e.Acc = f.fns.add(v, e.Acc, e.N == 0)
		e.N++
		if err := f.perform(kc, w, sw, e, d, out); err != nil {
			return err
		}
	}
	if f.merging {
		f.storeSet()
	}
	if !added && f.rules.IsElementLate(ts, wm) {
		if f.late != nil {
			f.late.Add(1)
		}
		if f.lateTag.id != "" {
			out.cur = ts
			CollectSide(out, f.lateTag, v)
		}
	}
	return nil
}

// mergeState moves the contents of the windows a MergingSet.Add merged
// into the result's state window and drops their timers.
func (f *windowFunc[K, T, ACC, R]) mergeState(kc *KeyedContext[K], m window.Merge) {
	if len(m.StateWindows) == 0 && len(m.Windows) == 0 {
		return
	}
	to, _ := f.contents.Get(m.StateWindow)
	for _, st := range m.StateWindows {
		from, ok := f.contents.Get(st)
		if !ok {
			continue
		}
		switch {
		case from.N == 0:
		case to.N == 0:
			to.Acc = from.Acc
		default:
			to.Acc = f.fns.merge(to.Acc, from.Acc)
		}
		to.N += from.N
		to.Count += from.Count
		f.contents.Remove(st)
	}
	f.contents.Put(m.StateWindow, to)
	for _, x := range m.Windows {
		f.deleteTimers(kc, x, m.Result)
	}
}

// perform carries out decision d for window w (state window sw, whose
// entry is e after the record was added).
func (f *windowFunc[K, T, ACC, R]) perform(kc *KeyedContext[K], w, sw window.Window, e winEntry[ACC], d window.Decision, out *Collector[R]) error {
	e.Count = d.Count
	for _, t := range d.Register.T[:d.Register.N] {
		if t.Domain == window.EventTime {
			kc.RegisterEventTimeTimer(t.TS)
		} else {
			kc.RegisterProcessingTimeTimer(t.TS)
		}
	}
	if d.Fire && e.N > 0 {
		f.wc.w, f.wc.wm = TimeWindow(w), kc.CurrentWatermark()
		cur := out.cur
		out.cur = w.MaxTimestamp()
		err := f.fns.emit(kc.CurrentKey(), &f.wc, e.Acc, out)
		out.cur = cur
		if err != nil {
			return err
		}
	}
	if d.Purge {
		var zero ACC
		e.Acc, e.N = zero, 0
	}
	if d.Clear {
		// Only a window's cleanup timer clears it, and its trigger timer
		// is never later: no timer of w is left to delete.
		f.contents.Remove(sw)
		if f.merging {
			f.set.Remove(w)
		}
		return nil
	}
	f.contents.Put(sw, e)
	return nil
}

// deleteTimers deletes the timers of window w that no other window of the
// key still needs (timers are per key and time, so windows may share
// one); keep is a window about to replace w (a merge), whose timers stay.
func (f *windowFunc[K, T, ACC, R]) deleteTimers(kc *KeyedContext[K], w, keep window.Window) {
	ts := f.rules.Timers(w)
	for _, t := range ts.T[:ts.N] {
		if f.timerNeeded(t, w, keep) {
			continue
		}
		if t.Domain == window.EventTime {
			kc.DeleteEventTimeTimer(t.TS)
		} else {
			kc.DeleteProcessingTimeTimer(t.TS)
		}
	}
}

func (f *windowFunc[K, T, ACC, R]) timerNeeded(t window.Timer, w, keep window.Window) bool {
	uses := func(x window.Window) bool {
		if x == w {
			return false
		}
		xs := f.rules.Timers(x)
		for _, xt := range xs.T[:xs.N] {
			if xt == t {
				return true
			}
		}
		return false
	}
	if keep != (window.Window{}) && uses(keep) {
		return true
	}
	if f.merging {
		for x := range f.set.All() {
			if uses(x) {
				return true
			}
		}
		return false
	}
	for x := range f.contents.All() {
		if uses(x) {
			return true
		}
	}
	return false
}

// OnTimer fires or clears every window of the key whose trigger or
// cleanup timer is at ts, in order of window start.
func (f *windowFunc[K, T, ACC, R]) OnTimer(ts int64, kc *KeyedContext[K], out *Collector[R]) error {
	t := window.Timer{Domain: window.EventTime, TS: ts}
	if kc.TimeDomain() == ProcessingTime {
		t.Domain = window.ProcessingTime
	}
	f.due = f.due[:0]
	if f.merging {
		if err := f.loadSet(); err != nil {
			return err
		}
		for w, sw := range f.set.All() {
			f.due = f.appendDue(f.due, t, w, sw)
		}
	} else {
		// A window's timers are at its MaxTimestamp and at that plus the
		// allowed lateness, so the windows a timer can belong to follow
		// from its time: no scan of the key's windows.
		size, late := f.assigner.Size(), f.rules.AllowedLateness()
		for _, end := range [2]int64{t.TS + 1, t.TS - late + 1} {
			w := window.Window{Start: end - size, End: end}
			if _, ok := f.contents.Get(w); ok {
				f.due = f.appendDue(f.due, t, w, w)
			}
			if late == 0 {
				break
			}
		}
	}
	slices.SortFunc(f.due, func(a, b dueWindow) int { return cmp.Compare(a.w.Start, b.w.Start) })
	for _, dw := range f.due {
		e, ok := f.contents.Get(dw.sw)
		if !ok {
			continue
		}
		if err := f.perform(kc, dw.w, dw.sw, e, f.rules.OnTimer(dw.w, t, e.Count), out); err != nil {
			return err
		}
	}
	if f.merging {
		f.storeSet()
	}
	return nil
}

func (f *windowFunc[K, T, ACC, R]) appendDue(due []dueWindow, t window.Timer, w, sw window.Window) []dueWindow {
	ts := f.rules.Timers(w)
	for _, x := range ts.T[:ts.N] {
		if x == t {
			return append(due, dueWindow{w, sw})
		}
	}
	return due
}

// firesProcessingTimersAtEnd: processing-time windows fire at the end of a
// bounded input with what they hold (Flink drops them; weir loses nothing
// silently). Event-time windows fire through MaxWatermark.
func (f *windowFunc[K, T, ACC, R]) firesProcessingTimersAtEnd() bool {
	return !f.eventTime && f.rules.Trigger().Kind() != window.CountTrigger
}
