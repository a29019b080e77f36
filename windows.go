package weir

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/window"
)

// TimeWindow is a window of time, half-open: [Start, End) in milliseconds.
type TimeWindow struct {
	Start, End int64
}

// MaxTimestamp is the last millisecond in the window, End-1: the
// timestamp its results carry and the watermark that fires it.
func (w TimeWindow) MaxTimestamp() int64 { return window.Window(w).MaxTimestamp() }

func (w TimeWindow) String() string { return window.Window(w).String() }

// WindowAssigner cuts a keyed stream into windows. Make one with
// TumblingEventTimeWindows, SlidingEventTimeWindows,
// EventTimeSessionWindows, their processing-time twins or GlobalWindows;
// an invalid size is reported when the job is built.
type WindowAssigner struct {
	a   window.Assigner
	err error
}

// millis converts d to milliseconds, failing on a fraction (event time
// has millisecond resolution).
func millis(what string, d time.Duration) (int64, error) {
	if d%time.Millisecond != 0 {
		return 0, fmt.Errorf("%s %v: event time has millisecond resolution; use a whole number of milliseconds", what, d)
	}
	return d.Milliseconds(), nil
}

func newAssigner(what string, mk func() (window.Assigner, error), ds ...time.Duration) WindowAssigner {
	for _, d := range ds {
		if _, err := millis(what, d); err != nil {
			return WindowAssigner{err: err}
		}
	}
	a, err := mk()
	if err != nil {
		return WindowAssigner{err: fmt.Errorf("%s: %w", what, err)}
	}
	return WindowAssigner{a: a}
}

func tumbling(d window.Domain, name string, size time.Duration, offset []time.Duration) WindowAssigner {
	off := time.Duration(0)
	if len(offset) > 0 {
		off = offset[0]
	}
	return newAssigner(name, func() (window.Assigner, error) {
		return window.NewTumbling(d, size.Milliseconds(), off.Milliseconds())
	}, size, off)
}

func sliding(d window.Domain, name string, size, slide time.Duration, offset []time.Duration) WindowAssigner {
	off := time.Duration(0)
	if len(offset) > 0 {
		off = offset[0]
	}
	return newAssigner(name, func() (window.Assigner, error) {
		return window.NewSliding(d, size.Milliseconds(), slide.Milliseconds(), off.Milliseconds())
	}, size, slide, off)
}

// TumblingEventTimeWindows assigns each record to the window of length
// size containing its timestamp: [ts - (ts-offset) mod size, +size). An
// optional offset shifts the windows (time zones: -8h for days in UTC+8).
func TumblingEventTimeWindows(size time.Duration, offset ...time.Duration) WindowAssigner {
	return tumbling(window.EventTime, "TumblingEventTimeWindows", size, offset)
}

// TumblingProcessingTimeWindows is TumblingEventTimeWindows on the
// processing clock: a record belongs to the window of the moment it is
// processed.
func TumblingProcessingTimeWindows(size time.Duration, offset ...time.Duration) WindowAssigner {
	return tumbling(window.ProcessingTime, "TumblingProcessingTimeWindows", size, offset)
}

// SlidingEventTimeWindows assigns each record to every window of length
// size starting at a multiple of slide (plus offset) that contains its
// timestamp: size/slide windows per record.
func SlidingEventTimeWindows(size, slide time.Duration, offset ...time.Duration) WindowAssigner {
	return sliding(window.EventTime, "SlidingEventTimeWindows", size, slide, offset)
}

// SlidingProcessingTimeWindows is SlidingEventTimeWindows on the
// processing clock.
func SlidingProcessingTimeWindows(size, slide time.Duration, offset ...time.Duration) WindowAssigner {
	return sliding(window.ProcessingTime, "SlidingProcessingTimeWindows", size, slide, offset)
}

// EventTimeSessionWindows groups a key's records into sessions: each
// record opens [ts, ts+gap), and windows of a key that overlap or touch
// merge, so records at most gap apart share a session.
func EventTimeSessionWindows(gap time.Duration) WindowAssigner {
	return newAssigner("EventTimeSessionWindows", func() (window.Assigner, error) {
		return window.NewSession(window.EventTime, gap.Milliseconds())
	}, gap)
}

// ProcessingTimeSessionWindows is EventTimeSessionWindows on the
// processing clock.
func ProcessingTimeSessionWindows(gap time.Duration) WindowAssigner {
	return newAssigner("ProcessingTimeSessionWindows", func() (window.Assigner, error) {
		return window.NewSession(window.ProcessingTime, gap.Milliseconds())
	}, gap)
}

// GlobalWindows puts all records of a key into one window, which only a
// CountTrigger fires.
func GlobalWindows() WindowAssigner { return WindowAssigner{a: window.NewGlobal()} }

// WindowTrigger says when a window fires; by default the time trigger of
// its assigner (event time: when the watermark passes its end, and again
// for each element within the allowed lateness).
type WindowTrigger struct {
	t   window.Trigger
	err error
}

// CountTrigger fires a window every n elements, keeping its contents (each
// firing includes every element so far).
func CountTrigger(n int64) WindowTrigger {
	t, err := window.NewCountTrigger(n, false)
	return WindowTrigger{t: t, err: err}
}

// PurgingCountTrigger fires a window every n elements and clears it, so
// each firing has n elements.
func PurgingCountTrigger(n int64) WindowTrigger {
	t, err := window.NewCountTrigger(n, true)
	return WindowTrigger{t: t, err: err}
}

// WindowedStream is a keyed stream cut into windows, waiting for its
// window function (ReduceWindow, AggregateWindow, ProcessWindow,
// AggregateProcessWindow).
type WindowedStream[K comparable, T any] struct {
	k        Keyed[K, T]
	assigner WindowAssigner
	trigger  WindowTrigger
	lateness time.Duration
	lateTag  string // "": late records are dropped (and counted)
	err      error
}

// Window cuts the keyed stream k into windows by a.
func Window[K comparable, T any](k Keyed[K, T], a WindowAssigner) WindowedStream[K, T] {
	return WindowedStream[K, T]{k: k, assigner: a}
}

// Trigger replaces the assigner's default trigger.
func (w WindowedStream[K, T]) Trigger(t WindowTrigger) WindowedStream[K, T] {
	w.trigger = t
	return w
}

// AllowedLateness keeps event-time windows for d after they fired: each
// record that arrives within it fires the window again with the updated
// result; records later than that are late (SideOutputLateData).
func (w WindowedStream[K, T]) AllowedLateness(d time.Duration) WindowedStream[K, T] {
	w.lateness = d
	return w
}

// SideOutputLateData sends records that arrive after their windows'
// allowed lateness to the side output tag (read it with SideOutput on the
// window's result stream) instead of dropping them. Either way they are
// counted in the numLateRecordsDropped metric.
func (w WindowedStream[K, T]) SideOutputLateData(tag OutputTag[T]) WindowedStream[K, T] {
	if tag.id == "" {
		w.err = fmt.Errorf("SideOutputLateData: the OutputTag has no id: make it with weir.NewOutputTag")
	}
	w.lateTag = tag.id
	return w
}

// rules validates the windowed stream and returns its rules.
func (w WindowedStream[K, T]) rules(where string) (window.Rules, error) {
	if w.err != nil {
		return window.Rules{}, fmt.Errorf("%s: %w", where, w.err)
	}
	if w.assigner.err != nil {
		return window.Rules{}, fmt.Errorf("%s: %w", where, w.assigner.err)
	}
	if w.assigner == (WindowAssigner{}) {
		return window.Rules{}, fmt.Errorf("%s: the WindowAssigner is the zero value: make it with TumblingEventTimeWindows, SlidingEventTimeWindows, EventTimeSessionWindows, … or GlobalWindows", where)
	}
	if w.trigger.err != nil {
		return window.Rules{}, fmt.Errorf("%s: %w", where, w.trigger.err)
	}
	late, err := millis("AllowedLateness", w.lateness)
	if err != nil {
		return window.Rules{}, fmt.Errorf("%s: %w", where, err)
	}
	r, err := window.NewRules(w.assigner.a, w.trigger.t, late)
	if err != nil {
		return window.Rules{}, fmt.Errorf("%s: %w", where, err)
	}
	if r.Assigner().IsEventTime() && !w.k.s.node.Timed {
		return window.Rules{}, fmt.Errorf("%s: event-time windows after %q, whose records carry no timestamps: add a WatermarkStrategy upstream (FromSourceWithWatermarks or AssignTimestampsAndWatermarks), or use processing-time windows", where, w.k.s.node.Name)
	}
	return r, nil
}

// AggregateFunction folds a window's records into an accumulator
// incrementally, so a window holds one ACC instead of its records
// (Flink's AggregateFunction). Its methods must not keep references to
// what they are given beyond returning it.
type AggregateFunction[T, ACC, R any] interface {
	// CreateAccumulator returns a new, empty accumulator.
	CreateAccumulator() ACC
	// Add folds v into acc and returns the result.
	Add(v T, acc ACC) ACC
	// Result computes the window's result from acc.
	Result(acc ACC) R
	// Merge combines two accumulators (session windows merging).
	Merge(a, b ACC) ACC
}

// ProcessWindowFunction computes a window's results from all of its
// records (or, after AggregateProcessWindow, from its one aggregate).
type ProcessWindowFunction[K comparable, IN, OUT any] interface {
	// Process is called when window wc.Window() of key fires, with its
	// elements. The records it collects carry the window's MaxTimestamp.
	Process(key K, wc *WindowContext, elements []IN, out *Collector[OUT]) error
}

// WindowContext tells a ProcessWindowFunction about the firing.
type WindowContext struct {
	w   TimeWindow
	wm  int64
	now func() time.Time
}

// Window is the window that fires.
func (c *WindowContext) Window() TimeWindow { return c.w }

// CurrentWatermark is the operator's watermark.
func (c *WindowContext) CurrentWatermark() int64 { return c.wm }

// CurrentProcessingTime is the wall clock in unix milliseconds. In
// WEAKLY_CONSISTENT mode it is the time the task polled the batch being
// processed (or fired the timers), logged with it, so a task restarted
// alone reads again what its failed attempt read; read the time here, not
// from time.Now, for a replay to reproduce a function's output.
func (c *WindowContext) CurrentProcessingTime() int64 { return c.now().UnixMilli() }

// ReduceWindow folds each window's records with f and emits one result per
// firing (Flink's reduce on a windowed stream).
func ReduceWindow[K comparable, T any](w WindowedStream[K, T], f func(a, b T) T) Stream[T] {
	fns := windowFns[K, T, T, T]{
		add:   func(v T, acc T, first bool) T { return choose(first, v, acc, f) },
		merge: f,
		emit: func(_ K, _ *WindowContext, acc T, out *Collector[T]) error {
			out.Collect(acc)
			return nil
		},
	}
	return windowed(w, "Window(Reduce)", func() windowFns[K, T, T, T] { return fns })
}

func choose[T any](first bool, v, acc T, f func(a, b T) T) T {
	if first {
		return v
	}
	return f(acc, v)
}

// AggregateWindow aggregates each window's records with agg and emits
// agg.Result per firing.
func AggregateWindow[K comparable, T, ACC, R any](w WindowedStream[K, T], agg AggregateFunction[T, ACC, R]) Stream[R] {
	fns := aggregateFns[K, T, ACC, R](agg)
	fns.emit = func(_ K, _ *WindowContext, acc ACC, out *Collector[R]) error {
		out.Collect(agg.Result(acc))
		return nil
	}
	return windowed(w, "Window(Aggregate)", func() windowFns[K, T, ACC, R] { return fns })
}

func aggregateFns[K comparable, T, ACC, R any](agg AggregateFunction[T, ACC, R]) windowFns[K, T, ACC, R] {
	return windowFns[K, T, ACC, R]{
		add: func(v T, acc ACC, first bool) ACC {
			if first {
				acc = agg.CreateAccumulator()
			}
			return agg.Add(v, acc)
		},
		merge: agg.Merge,
	}
}

// ProcessWindow keeps each window's records and hands them to a
// ProcessWindowFunction when it fires. newFn is called once per subtask.
// Prefer AggregateProcessWindow when an aggregate suffices: it keeps one
// accumulator per window instead of every record.
func ProcessWindow[K comparable, T, R any](w WindowedStream[K, T], newFn func() ProcessWindowFunction[K, T, R]) Stream[R] {
	return windowed(w, "Window(Process)", func() windowFns[K, T, []T, R] {
		fn := newFn()
		return windowFns[K, T, []T, R]{
			add:   func(v T, acc []T, _ bool) []T { return append(acc, v) },
			merge: func(a, b []T) []T { return append(a, b...) },
			emit: func(key K, wc *WindowContext, acc []T, out *Collector[R]) error {
				return fn.Process(key, wc, acc, out)
			},
		}
	})
}

// AggregateProcessWindow aggregates each window incrementally with agg
// and hands the one result to a ProcessWindowFunction when the window
// fires, for results that need the window (its start and end) or the key.
func AggregateProcessWindow[K comparable, T, ACC, V, R any](w WindowedStream[K, T], agg AggregateFunction[T, ACC, V], newFn func() ProcessWindowFunction[K, V, R]) Stream[R] {
	return windowed(w, "Window(Aggregate, Process)", func() windowFns[K, T, ACC, R] {
		fn := newFn()
		inner := aggregateFns[K, T, ACC, V](agg)
		one := make([]V, 1)
		return windowFns[K, T, ACC, R]{
			add:   inner.add,
			merge: inner.merge,
			emit: func(key K, wc *WindowContext, acc ACC, out *Collector[R]) error {
				one[0] = agg.Result(acc)
				return fn.Process(key, wc, one, out)
			},
		}
	})
}
