package window

import (
	"fmt"
	"math"
)

// TriggerKind says when a window fires.
type TriggerKind uint8

const (
	// DefaultTrigger is the zero Trigger: the time trigger of the
	// assigner's domain (global windows have none and need a count).
	DefaultTrigger TriggerKind = iota
	// EventTimeTrigger fires when the watermark passes the window's
	// MaxTimestamp, and again for each element that arrives after that
	// within the allowed lateness (a late firing with the updated result).
	EventTimeTrigger
	// ProcessingTimeTrigger fires when the processing clock passes the
	// window's MaxTimestamp.
	ProcessingTimeTrigger
	// CountTrigger fires every N elements of a window.
	CountTrigger
)

// Trigger says when windows fire. The zero value is DefaultTrigger.
type Trigger struct {
	kind  TriggerKind
	n     int64
	purge bool
}

// NewCountTrigger fires a window every n elements (n ≥ 1). Without purge
// the window keeps its contents, so each firing includes all elements so
// far (Flink's CountTrigger); with purge a firing clears them (Flink's
// PurgingTrigger around it), so each firing has n elements.
func NewCountTrigger(n int64, purge bool) (Trigger, error) {
	if n < 1 {
		return Trigger{}, fmt.Errorf("window: count trigger of %d elements: must be at least 1: %w", n, ErrInvalid)
	}
	return Trigger{kind: CountTrigger, n: n, purge: purge}, nil
}

// NewEventTimeTrigger is the explicit event-time trigger.
func NewEventTimeTrigger() Trigger { return Trigger{kind: EventTimeTrigger} }

// NewProcessingTimeTrigger is the explicit processing-time trigger.
func NewProcessingTimeTrigger() Trigger { return Trigger{kind: ProcessingTimeTrigger} }

// Kind is the trigger's kind.
func (t Trigger) Kind() TriggerKind { return t.kind }

// String names the trigger, for errors and logs.
func (t Trigger) String() string {
	switch t.kind {
	case EventTimeTrigger:
		return "event-time trigger"
	case ProcessingTimeTrigger:
		return "processing-time trigger"
	case CountTrigger:
		if t.purge {
			return fmt.Sprintf("purging count trigger(%d)", t.n)
		}
		return fmt.Sprintf("count trigger(%d)", t.n)
	}
	return "default trigger"
}

// Rules are the decisions of one window operator: its assigner, trigger
// and allowed lateness. The operator asks them what to do for each record's
// window (OnElement) and each timer (OnTimer) and performs the Decision on
// its keyed state and timer service. A Rules is a small value; methods do
// not allocate.
type Rules struct {
	a        Assigner
	t        Trigger
	lateness int64
}

// NewRules checks that the assigner, trigger and allowed lateness (ms)
// work together. Allowed lateness must be ≥ 0 and applies to event time
// only (processing time has no late records). The event-time trigger needs
// an event-time assigner and the processing-time trigger a processing-time
// one; global windows need a count trigger, as no time ever ends them.
func NewRules(a Assigner, t Trigger, allowedLateness int64) (Rules, error) {
	if a.kind == 0 {
		return Rules{}, fmt.Errorf("window: no window assigner: %w", ErrInvalid)
	}
	if allowedLateness < 0 {
		return Rules{}, fmt.Errorf("window: %s: allowed lateness %d ms: must be ≥ 0: %w", a, allowedLateness, ErrInvalid)
	}
	if t.kind == DefaultTrigger {
		switch {
		case a.kind == Global:
			return Rules{}, fmt.Errorf("window: global windows never end: give them a count trigger: %w", ErrInvalid)
		case a.domain == EventTime:
			t = NewEventTimeTrigger()
		default:
			t = NewProcessingTimeTrigger()
		}
	}
	switch {
	case t.kind == EventTimeTrigger && !a.IsEventTime(), t.kind == ProcessingTimeTrigger && (a.domain != ProcessingTime || a.kind == Global):
		return Rules{}, fmt.Errorf("window: %s on %s windows: use the trigger of the windows' time domain or a count trigger: %w", t, a, ErrInvalid)
	}
	return Rules{a: a, t: t, lateness: allowedLateness}, nil
}

// Assigner is the rules' assigner.
func (r Rules) Assigner() Assigner { return r.a }

// Trigger is the rules' trigger (never DefaultTrigger).
func (r Rules) Trigger() Trigger { return r.t }

// AllowedLateness is the allowed lateness in ms.
func (r Rules) AllowedLateness() int64 { return r.lateness }

// CleanupTime is the time after which an event-time window's state may go
// (and late elements for it are dropped): MaxTimestamp + lateness,
// saturating at math.MaxInt64, which means never.
func CleanupTime(w Window, lateness int64) int64 { return satAdd(w.MaxTimestamp(), lateness) }

// IsLate reports whether event-time window w is past its cleanup time at
// watermark wm: an element for it is not added (and, if it has no other
// window, goes to the late side output). The comparison is ≤ because the
// cleanup timer at CleanupTime fires once the watermark reaches it.
func IsLate(w Window, wm, lateness int64) bool { return CleanupTime(w, lateness) <= wm }

// IsLate is IsLate for the rules: never for processing-time or global
// windows.
func (r Rules) IsLate(w Window, wm int64) bool {
	return r.a.IsEventTime() && IsLate(w, wm, r.lateness)
}

// IsElementLate reports whether a record at ts that was added to none of
// its windows (all were late, or it fell in a gap between sliding windows)
// goes to the late side output: ts + lateness ≤ wm, for event time only.
func (r Rules) IsElementLate(ts, wm int64) bool {
	return r.a.IsEventTime() && satAdd(ts, r.lateness) <= wm
}

// cleanup is w's cleanup timer; false when it has none (it lives forever:
// global windows, or a cleanup time saturated at the end of time).
func (r Rules) cleanup(w Window) (Timer, bool) {
	var t int64
	if r.a.IsEventTime() {
		t = CleanupTime(w, r.lateness)
	} else {
		t = w.MaxTimestamp()
	}
	return Timer{Domain: r.a.domain, TS: t}, t != math.MaxInt64
}

// trigger is w's trigger timer; false for a count trigger.
func (r Rules) trigger(w Window) (Timer, bool) {
	switch r.t.kind {
	case EventTimeTrigger:
		return Timer{Domain: EventTime, TS: w.MaxTimestamp()}, true
	case ProcessingTimeTrigger:
		return Timer{Domain: ProcessingTime, TS: w.MaxTimestamp()}, true
	}
	return Timer{}, false
}

// Timers lists the timers window w may have registered (its trigger and
// cleanup timers, once each), for the operator to delete when w merges
// away: Timers[:N].
func (r Rules) Timers(w Window) Timers {
	var ts Timers
	if t, ok := r.trigger(w); ok {
		ts.add(t)
	}
	if t, ok := r.cleanup(w); ok {
		ts.add(t)
	}
	return ts
}

// Timers is a list of at most two timers without a slice: T[:N].
type Timers struct {
	T [2]Timer
	N int
}

func (ts *Timers) add(t Timer) {
	if ts.N == 1 && ts.T[0] == t {
		return // trigger and cleanup coincide (lateness 0): one timer
	}
	ts.T[ts.N] = t
	ts.N++
}

// Decision is what the operator does for one window, in this order:
// if Skip, nothing else (the element is not added; a merging operator
// removes the window from its MergingSet). Otherwise it adds the element
// (OnElement only), stores Count as the window's trigger state, registers
// Register, emits the window's result if Fire and the window has contents,
// clears the contents if Purge, and if Clear forgets the window altogether
// (contents, trigger state, MergingSet entry, remaining timers).
type Decision struct {
	Skip     bool
	Fire     bool
	Purge    bool
	Clear    bool
	Count    int64
	Register Timers
}

// OnElement decides for window w of a record, where count is the window's
// trigger state (elements since the last count firing; 0 for time
// triggers) and wm the operator's current watermark. For a merging
// assigner, w is the Result of MergingSet.Add, after the merge.
func (r Rules) OnElement(w Window, count, wm int64) Decision {
	if r.IsLate(w, wm) {
		return Decision{Skip: true, Count: count}
	}
	d := Decision{Count: count}
	switch r.t.kind {
	case EventTimeTrigger:
		if w.MaxTimestamp() <= wm {
			d.Fire = true // a late element within lateness: fire again now
		} else {
			d.Register.add(Timer{Domain: EventTime, TS: w.MaxTimestamp()})
		}
	case ProcessingTimeTrigger:
		d.Register.add(Timer{Domain: ProcessingTime, TS: w.MaxTimestamp()})
	case CountTrigger:
		d.Count++
		if d.Count >= r.t.n {
			d.Fire, d.Purge, d.Count = true, r.t.purge, 0
		}
	}
	if t, ok := r.cleanup(w); ok {
		d.Register.add(t)
	}
	return d
}

// OnTimer decides for timer t of window w (count as in OnElement). The
// trigger timer at MaxTimestamp fires the window; the cleanup timer clears
// it. With no lateness they are one timer: fire, then clear. A timer of a
// window the operator no longer holds must not reach here.
func (r Rules) OnTimer(w Window, t Timer, count int64) Decision {
	d := Decision{Count: count}
	if tt, ok := r.trigger(w); ok && tt == t {
		d.Fire = true
	}
	if ct, ok := r.cleanup(w); ok && ct == t {
		d.Clear = true
	}
	return d
}
