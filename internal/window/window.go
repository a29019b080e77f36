package window

import (
	"fmt"
	"math"
)

// Window is the half-open interval of time [Start, End) in milliseconds.
// The global window is [math.MinInt64, math.MaxInt64): it reaches the end
// of time, so its MaxTimestamp is math.MaxInt64 rather than End-1.
type Window struct{ Start, End int64 }

// GlobalWindow is the one window of a Global assigner.
func GlobalWindow() Window { return Window{Start: math.MinInt64, End: math.MaxInt64} }

// MaxTimestamp is the largest timestamp inside w: the time at which an
// event-time trigger fires it. A window whose End is math.MaxInt64 only
// ends with time itself (the global window; time windows never end there
// as assigners reject timestamps that close to the end), so it has no
// last millisecond short of math.MaxInt64.
func (w Window) MaxTimestamp() int64 {
	if w.End == math.MaxInt64 {
		return math.MaxInt64
	}
	return w.End - 1
}

// Intersects reports whether w and o overlap or touch. Touching counts
// ([0,5) and [5,10) intersect) so that two session events exactly GAP
// apart share a session, as the built-in job of issue 12 specifies and as
// Flink's session merging does.
func (w Window) Intersects(o Window) bool { return w.Start <= o.End && o.Start <= w.End }

// Cover is the smallest window containing both w and o.
func (w Window) Cover(o Window) Window {
	return Window{Start: min(w.Start, o.Start), End: max(w.End, o.End)}
}

// String prints w as [start,end), the global window as [global).
func (w Window) String() string {
	if w == GlobalWindow() {
		return "[global)"
	}
	return fmt.Sprintf("[%d,%d)", w.Start, w.End)
}

// Domain is the clock a window's time is measured on.
type Domain uint8

const (
	// EventTime: timestamps carried by the records; time advances with
	// the watermark.
	EventTime Domain = iota
	// ProcessingTime: the wall clock of the task; the operator passes
	// the current processing time where a timestamp is asked for.
	ProcessingTime
)

// String is "event" or "processing".
func (d Domain) String() string {
	if d == EventTime {
		return "event"
	}
	return "processing"
}

// Timer is a timer to register or delete in the operator's timer service
// for one key and window: TS on the Domain clock.
type Timer struct {
	Domain Domain
	TS     int64
}

// String prints t as domain@ts.
func (t Timer) String() string { return fmt.Sprintf("%s@%s", t.Domain, ts(t.TS)) }

func ts(v int64) string {
	switch v {
	case math.MinInt64:
		return "min"
	case math.MaxInt64:
		return "max"
	}
	return fmt.Sprint(v)
}

// satAdd is a+b for b >= 0, saturating at math.MaxInt64: a cleanup time
// past the end of time is the end of time.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
