package dataflow

import (
	"context"
	"time"
)

// WatermarkOperator is implemented by operators that act on event time
// (event-time timers, windows, joins). ProcessWatermark runs when the
// operator's input watermark advances to wm, after every record before
// the watermark: the operator fires what wm makes due, emitting
// downstream, and returns the watermark to forward — usually wm, less
// when it holds event time back (an interval join), and
// watermark.MinWatermark to forward nothing. Operators without it forward
// the watermark unchanged.
type WatermarkOperator interface {
	ProcessWatermark(ctx context.Context, wm int64) (int64, error)
}

// WatermarkOutput is how an operator that generates watermarks (a source
// with a watermark strategy, a timestamp assigner) emits them: into the
// operators after it in the chain and then to the task's consumers.
// A watermark not above the last one emitted is dropped, so event time
// never moves backwards downstream.
type WatermarkOutput interface {
	EmitWatermark(ctx context.Context, wm int64) error
	// MarkIdle tells the consumers that this output sends no records for
	// now and must not hold their event time back; the next watermark or
	// MarkActive makes it active again.
	MarkIdle(ctx context.Context) error
	MarkActive(ctx context.Context) error
}

// WatermarkGenerator is implemented by operators that generate
// watermarks: the task gives them their WatermarkOutput at deployment and,
// every pipeline.auto-watermark-interval, calls OnPeriodicEmit with the
// processing time between two batches.
type WatermarkGenerator interface {
	WatermarkEmitter
	OnPeriodicEmit(ctx context.Context, now time.Time) error
}

// WatermarkEmitter is implemented by operators that emit watermarks at
// other times than the call that brought them: an async I/O operator
// holds a watermark until the records before it left (its
// ProcessWatermark forwards nothing) and emits it then, from a mailbox
// action. The task gives them their WatermarkOutput at deployment.
type WatermarkEmitter interface {
	SetWatermarkOutput(out WatermarkOutput)
}
