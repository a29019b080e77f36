package weir

import (
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/watermark"
)

// Event time: the timestamps records carry, in milliseconds (by
// convention since the Unix epoch), and the watermarks that say how far
// event time has progressed: a watermark w promises that no more records
// with a timestamp at or before w follow (those that do are late).
const (
	// NoTimestamp is the timestamp of a record that has none: the stream
	// has no WatermarkStrategy upstream, or the record came from a
	// processing-time timer.
	NoTimestamp int64 = network.NoTimestamp
	// MinWatermark is the event time of an operator before its first
	// watermark.
	MinWatermark int64 = watermark.MinWatermark
	// MaxWatermark is the watermark at the end of a bounded input: every
	// event-time timer and window fires.
	MaxWatermark int64 = watermark.MaxWatermark
)

// TimeDomain is the clock a timer was set on.
type TimeDomain uint8

const (
	// EventTime timers fire when the watermark reaches them.
	EventTime TimeDomain = iota + 1
	// ProcessingTime timers fire by the wall clock.
	ProcessingTime
)

func (d TimeDomain) String() string {
	switch d {
	case EventTime:
		return "event time"
	case ProcessingTime:
		return "processing time"
	}
	return "no time domain"
}

// article names the domain after "a", for messages.
func (d TimeDomain) article() string {
	if d == EventTime {
		return "n event-time"
	}
	return " processing-time"
}

// eventClockState names the operator state holding an operator's event
// time. It is union state: after a rescale every subtask restores the
// minimum over all old subtasks, never a time one of its keys had not
// reached.
const eventClockState = runtime.UnionStatePrefix + "weir.event-time"

// eventClock is the event time of an operator with event-time timers: the
// last watermark it processed. It is checkpointed, so that a restored
// operator starts where it was instead of at MinWatermark: a record that
// was late before a failure is late after it, and a window that fired and
// was purged is not opened again by a replayed late record. (Flink starts
// restored operators at MinWatermark; weir's guarantee that a restored run
// produces the failure-free output needs this.)
type eventClock struct {
	wm int64
	l  *state.OperatorList[int64]
}

// open registers the clock's state in ops and restores it.
func (c *eventClock) open(ops *state.OperatorBackend) error {
	c64, err := codec.For[int64]()
	if err != nil {
		return err
	}
	l, err := state.RegisterOperatorList(ops, eventClockState, c64)
	if err != nil {
		return err
	}
	c.l, c.wm = l, MinWatermark
	for i, w := range l.Get() {
		if i == 0 || w < c.wm {
			c.wm = w
		}
	}
	return nil
}

// advance moves the clock to wm, reporting whether it moved.
func (c *eventClock) advance(wm int64) bool {
	if wm <= c.wm {
		return false
	}
	c.wm = wm
	return true
}

// snapshot stores the clock in its state for the checkpoint being taken.
func (c *eventClock) snapshot() { c.l.Update([]int64{c.wm}) }
