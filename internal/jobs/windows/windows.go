// Package windows is weir's built-in windowed job (weir run windows),
// specified exactly because it is also the event-time test: event i has
// account (i*7919) mod K and amount ((i*2654435761) mod 2^32) mod 1000 + 1
// (as the demo) and event time ts = i*E + M - d ms, with disorder
// d = ((i*2246822519) mod 2^32) mod (M+1). Watermarks bound the
// out-of-orderness by O; windows keyed by account (tumbling, sliding or
// session, on event time) count and sum the amounts, and every firing
// writes "account,start,end,count,sum" to an exactly-once file sink; each
// event dropped as late writes "i,account,ts" to the exactly-once sink in
// the late/ folder.
//
// With O >= M no event is ever late (the events of one source subtask are
// at most M out of order), so the output is a pure function of the
// parameters: Expected computes it without the engine, and a run with
// failures must commit exactly that multiset. With O < M lateness depends
// on when watermarks are emitted; Verify then checks conservation for
// tumbling windows: every event is counted in its window's last firing or
// listed as late, exactly once.
//
// Owns: the windows job and the functions its output must equal. Must not
// touch: engine internals; it is built with the public API.
package windows

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// Spec is the window of --window: tumble:SIZE, slide:SIZE,SLIDE or
// session:GAP, sizes in milliseconds.
type Spec struct {
	Kind             string // "tumble", "slide" or "session"
	Size, Slide, Gap int64
}

// ParseSpec parses --window. A size is a Go duration ("10s", "500ms") or
// a number of milliseconds.
func ParseSpec(s string) (Spec, error) {
	kind, args, ok := strings.Cut(s, ":")
	if !ok {
		return Spec{}, fmt.Errorf("--window %q: want tumble:SIZE, slide:SIZE,SLIDE or session:GAP", s)
	}
	parts := strings.Split(args, ",")
	var ms []int64
	for _, p := range parts {
		v, err := parseMillis(p)
		if err != nil {
			return Spec{}, fmt.Errorf("--window %q: %w", s, err)
		}
		ms = append(ms, v)
	}
	want := map[string]int{"tumble": 1, "slide": 2, "session": 1}
	n, known := want[kind]
	switch {
	case !known:
		return Spec{}, fmt.Errorf("--window %q: unknown window %q: want tumble:SIZE, slide:SIZE,SLIDE or session:GAP", s, kind)
	case len(ms) != n:
		return Spec{}, fmt.Errorf("--window %q: %s takes %d size(s), got %d", s, kind, n, len(ms))
	}
	for _, v := range ms {
		if v <= 0 {
			return Spec{}, fmt.Errorf("--window %q: sizes must be positive", s)
		}
	}
	sp := Spec{Kind: kind}
	switch kind {
	case "tumble":
		sp.Size = ms[0]
	case "slide":
		sp.Size, sp.Slide = ms[0], ms[1]
	case "session":
		sp.Gap = ms[0]
	}
	return sp, nil
}

// ParseMillis parses the value of a time flag (--event-spacing,
// --max-disorder, --out-of-orderness, --allowed-lateness) as ParseSpec
// parses sizes: a number of milliseconds or a Go duration. The error names
// the flag and the accepted forms.
func ParseMillis(flag, s string) (int64, error) {
	v, err := parseMillis(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want milliseconds or a Go duration such as 2s or 1500ms (event time has millisecond resolution)", flag, s)
	}
	return v, nil
}

func parseMillis(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("size %q: want milliseconds or a duration such as 10s", s)
	}
	if d%time.Millisecond != 0 {
		return 0, fmt.Errorf("size %q: event time has millisecond resolution", s)
	}
	return d.Milliseconds(), nil
}

func (s Spec) String() string {
	switch s.Kind {
	case "tumble":
		return fmt.Sprintf("tumble:%d", s.Size)
	case "slide":
		return fmt.Sprintf("slide:%d,%d", s.Size, s.Slide)
	}
	return fmt.Sprintf("session:%d", s.Gap)
}

// Options are the job's parameters; times in milliseconds.
type Options struct {
	Events, Keys   int64
	Window         Spec
	Spacing        int64 // E, default 1
	MaxDisorder    int64 // M, default 2000
	OutOfOrderness int64 // O, default M
	Lateness       int64 // L, default 0
	Rate           float64
	Out            string // the sink folder; late events go to Out/late
}

// Defaults fills the defaults the flags document: E = 1, M = 2000, O = M.
// A negative O means "not set".
func (o *Options) Defaults() {
	if o.Spacing == 0 {
		o.Spacing = 1
	}
	if o.OutOfOrderness < 0 {
		o.OutOfOrderness = o.MaxDisorder
	}
}

// Validate names what is wrong with o and the fix.
func (o Options) Validate() error {
	switch {
	case o.Events < 0:
		return fmt.Errorf("--events %d: must not be negative", o.Events)
	case o.Keys < 1:
		return fmt.Errorf("--keys %d: must be at least 1", o.Keys)
	case o.Spacing < 1:
		return fmt.Errorf("--event-spacing %d: must be at least 1 ms", o.Spacing)
	case o.MaxDisorder < 0:
		return fmt.Errorf("--max-disorder %d: must not be negative", o.MaxDisorder)
	case o.OutOfOrderness < 0:
		return fmt.Errorf("--out-of-orderness %d: must not be negative", o.OutOfOrderness)
	case o.Lateness < 0:
		return fmt.Errorf("--allowed-lateness %d: must not be negative", o.Lateness)
	case o.Window.Kind == "":
		return fmt.Errorf("--window is required: tumble:SIZE, slide:SIZE,SLIDE or session:GAP")
	case o.Events > 0 && o.Events > (1<<62)/o.Spacing:
		return fmt.Errorf("--events %d at --event-spacing %d overflows event time", o.Events, o.Spacing)
	}
	return nil
}

// Event is one generated event.
type Event struct {
	I, Account, Amount, TS int64
}

// Disorder is d of event i: how far its time lies behind i*E + M.
func Disorder(i, m int64) int64 {
	return int64(uint64(uint32(uint64(i)*2246822519)) % uint64(m+1))
}

// EventAt is event i.
func EventAt(i int64, o Options) Event {
	return Event{I: i, Account: demo.Account(i, o.Keys), Amount: demo.Amount(i), TS: i*o.Spacing + o.MaxDisorder - Disorder(i, o.MaxDisorder)}
}

// acc is a window's count and sum.
type acc struct{ Count, Sum int64 }

type countSum struct{}

func (countSum) CreateAccumulator() acc { return acc{} }
func (countSum) Add(e Event, a acc) acc { return acc{a.Count + 1, a.Sum + e.Amount} }
func (countSum) Result(a acc) acc       { return a }
func (countSum) Merge(a, b acc) acc     { return acc{a.Count + b.Count, a.Sum + b.Sum} }

// line formats a firing.
type line struct{}

func (line) Process(account int64, wc *weir.WindowContext, r []acc, out *weir.Collector[string]) error {
	w := wc.Window()
	out.Collect(Line(account, w.Start, w.End, r[0].Count, r[0].Sum))
	return nil
}

// Line is the output line of one firing.
func Line(account, start, end, count, sum int64) string {
	return fmt.Sprintf("%d,%d,%d,%d,%d", account, start, end, count, sum)
}

// LateLine is the line of an event dropped as late.
func LateLine(e Event) string { return fmt.Sprintf("%d,%d,%d", e.I, e.Account, e.TS) }

// Assigner is the window assigner of spec.
func Assigner(s Spec) weir.WindowAssigner {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	switch s.Kind {
	case "slide":
		return weir.SlidingEventTimeWindows(ms(s.Size), ms(s.Slide))
	case "session":
		return weir.EventTimeSessionWindows(ms(s.Gap))
	}
	return weir.TumblingEventTimeWindows(ms(s.Size))
}

// Build adds the job to env: events with watermarks -> window by account
// -> count and sum -> exactly-once files (late events to Out/late).
func Build(env *weir.Env, o Options) {
	lines, late := Pipeline(env, o)
	text := func(v string, dst []byte) []byte { return append(dst, v...) }
	weir.SinkToTransactional(lines, file.ExactlyOnce(o.Out, text)).Name("files").UID("files")
	weir.SinkToTransactional(late, file.ExactlyOnce(filepath.Join(o.Out, "late"), text)).Name("late-files").UID("late-files")
}

// Pipeline builds the job up to its sinks: the firings' lines and the
// late events' lines.
func Pipeline(env *weir.Env, o Options) (lines, late weir.Stream[string]) {
	gen := func(i int64) Event { return EventAt(i, o) }
	strategy := weir.ForBoundedOutOfOrderness[Event](time.Duration(o.OutOfOrderness) * time.Millisecond).
		WithTimestampAssigner(func(e Event, _ int64) int64 { return e.TS })
	events := weir.FromSourceWithWatermarks(env, datagen.New(gen, datagen.WithCount(o.Events), datagen.WithRate(o.Rate)), strategy).
		Name("events").UID("events")
	lateTag := weir.NewOutputTag[Event]("late")
	w := weir.Window(weir.KeyBy(events, func(e Event) int64 { return e.Account }), Assigner(o.Window)).
		AllowedLateness(time.Duration(o.Lateness) * time.Millisecond).
		SideOutputLateData(lateTag)
	lines = weir.AggregateProcessWindow(w, weir.AggregateFunction[Event, acc, acc](countSum{}),
		func() weir.ProcessWindowFunction[int64, acc, string] { return line{} }).Name("windows").UID("windows")
	late = weir.Map(weir.SideOutput(lines, lateTag), LateLine).Name("late").UID("late")
	return lines, late
}
