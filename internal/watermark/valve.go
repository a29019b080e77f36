package watermark

import (
	"fmt"
	"math"
)

// MinWatermark is the watermark of a channel that has sent none yet;
// MaxWatermark the one of an input that ended.
const (
	MinWatermark int64 = math.MinInt64
	MaxWatermark int64 = math.MaxInt64
)

// Event is an input of a Valve.
type Event interface{ event() }

// Advance is a watermark that arrived on channel Ch.
type Advance struct {
	Ch int
	TS int64
}

// Idle marks channel Ch idle: it sends no data for now and must not hold
// event time back.
type Idle struct{ Ch int }

// Active marks channel Ch active again.
type Active struct{ Ch int }

// EndOfInput: channel Ch ended; it holds no watermark back any more.
type EndOfInput struct{ Ch int }

func (Advance) event()    {}
func (Idle) event()       {}
func (Active) event()     {}
func (EndOfInput) event() {}

// Action is an output of a Valve.
type Action interface{ action() }

// Emit: the input watermark advanced to TS; fire the event-time timers up
// to it, then forward it.
type Emit struct{ TS int64 }

// MarkIdle: every input channel is idle; tell the consumers the output is.
type MarkIdle struct{}

// MarkActive: an input channel became active again after all were idle.
type MarkActive struct{}

func (Emit) action()       {}
func (MarkIdle) action()   {}
func (MarkActive) action() {}

type channel struct {
	wm      int64
	idle    bool
	aligned bool // takes part in the minimum
	ended   bool
}

// Valve combines the watermarks of n input channels.
type Valve struct {
	chans []channel
	out   int64
	idle  bool
	acts  []Action
}

// NewValve returns the valve of n input channels, none with a watermark.
func NewValve(n int) *Valve {
	if n < 1 {
		panic(fmt.Sprintf("watermark: a valve needs at least one channel, got %d", n))
	}
	v := &Valve{chans: make([]channel, n), out: MinWatermark}
	for i := range v.chans {
		v.chans[i] = channel{wm: MinWatermark, aligned: true}
	}
	return v
}

// Watermark is the output watermark so far (MinWatermark before the first).
func (v *Valve) Watermark() int64 { return v.out }

// IsIdle reports whether every channel is idle.
func (v *Valve) IsIdle() bool { return v.idle }

// Step applies one event and returns the actions it causes, in order. The
// slice is reused by the next Step.
func (v *Valve) Step(ev Event) []Action {
	v.acts = v.acts[:0]
	switch ev := ev.(type) {
	case Advance:
		c := v.channel(ev.Ch)
		// A watermark of an idle channel is ignored, as Flink does: the
		// channel said it has nothing to say until it is active again.
		if c.ended || c.idle || ev.TS <= c.wm {
			break
		}
		c.wm = ev.TS
		if !c.aligned && c.wm >= v.out {
			c.aligned = true
		}
		v.advance()
	case Idle:
		c := v.channel(ev.Ch)
		if c.idle || c.ended {
			break
		}
		c.idle, c.aligned = true, false
		if v.allIdle() {
			v.flushMax()
			v.idle = true
			v.acts = append(v.acts, MarkIdle{})
		} else {
			v.advance()
		}
	case Active:
		c := v.channel(ev.Ch)
		if !c.idle {
			break
		}
		c.idle = false
		// Behind the output it waits until it catches up; at or above it
		// it takes part at once (it cannot lower the minimum below out).
		c.aligned = c.wm >= v.out
		if v.idle {
			v.idle = false
			v.acts = append(v.acts, MarkActive{})
		}
	case EndOfInput:
		c := v.channel(ev.Ch)
		if c.ended {
			break
		}
		wasIdle := v.idle
		*c = channel{wm: MaxWatermark, aligned: true, ended: true}
		if wasIdle {
			v.idle = false
			v.acts = append(v.acts, MarkActive{})
		}
		v.advance()
	default:
		panic(fmt.Sprintf("watermark: unknown event %T", ev))
	}
	return v.acts
}

func (v *Valve) channel(ch int) *channel {
	if ch < 0 || ch >= len(v.chans) {
		panic(fmt.Sprintf("watermark: channel %d of a valve of %d", ch, len(v.chans)))
	}
	return &v.chans[ch]
}

// advance emits the minimum over the active aligned channels if it is
// above the output.
func (v *Valve) advance() {
	lowest, any := MaxWatermark, false
	for i := range v.chans {
		c := &v.chans[i]
		if c.idle || !c.aligned {
			continue
		}
		any = true
		lowest = min(lowest, c.wm)
	}
	if any && lowest > v.out {
		v.out = lowest
		v.acts = append(v.acts, Emit{TS: lowest})
	}
}

func (v *Valve) allIdle() bool {
	for i := range v.chans {
		if !v.chans[i].idle {
			return false
		}
	}
	return true
}

// flushMax advances the output to the largest watermark of any channel:
// with every channel idle, nothing below it can still arrive.
func (v *Valve) flushMax() {
	highest := MinWatermark
	for i := range v.chans {
		highest = max(highest, v.chans[i].wm)
	}
	if highest > v.out {
		v.out = highest
		v.acts = append(v.acts, Emit{TS: highest})
	}
}
