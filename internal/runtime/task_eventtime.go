package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/watermark"
)

// eventTime is a task's event-time side: the valve that combines its input
// channels' watermarks (nil for a source task), the last watermark and
// idleness it sent downstream, and the chain's watermark generators with
// their period.
//
// A watermark travels through the chain synchronously: each
// WatermarkOperator fires what it makes due (its records pass through the
// rest of the chain at once) and returns what to forward, and the task
// broadcasts the result after every record emitted before it. An end of
// data is not a watermark: a bounded source sends MaxWatermark before its
// EndOfData, a source stopped for a savepoint does not, so its windows
// stay open in the savepoint (Flink's stop without drain).
type eventTime struct {
	valve    *watermark.Valve
	out      int64
	outIdle  bool
	gens     []dataflow.WatermarkGenerator
	interval time.Duration
	nextEmit time.Time
}

// setupEventTime hands the chain's watermark generators their outputs and
// makes the valve of a task with n input channels (0 for a source).
func (t *Task) setupEventTime(interval time.Duration, n int) {
	t.et = eventTime{out: watermark.MinWatermark, interval: interval}
	if n > 0 {
		t.et.valve = watermark.NewValve(n)
	}
	for i, op := range t.chain.ops {
		if e, ok := op.(dataflow.WatermarkEmitter); ok {
			e.SetWatermarkOutput(chainWatermarks{t: t, next: i + 1})
		}
		if g, ok := op.(dataflow.WatermarkGenerator); ok {
			t.et.gens = append(t.et.gens, g)
		}
	}
	if len(t.et.gens) > 0 && interval > 0 {
		t.et.nextEmit = t.now().Add(interval)
	}
	t.metrics.InputWatermark.Store(watermark.MinWatermark)
	t.metrics.OutputWatermark.Store(watermark.MinWatermark)
}

// chainWatermarks is the WatermarkOutput of chain operator next-1.
type chainWatermarks struct {
	t    *Task
	next int
}

func (c chainWatermarks) EmitWatermark(ctx context.Context, wm int64) error {
	return c.t.advanceWatermark(ctx, c.next, wm)
}
func (c chainWatermarks) MarkIdle(ctx context.Context) error   { return c.t.sendStatus(ctx, true) }
func (c chainWatermarks) MarkActive(ctx context.Context) error { return c.t.sendStatus(ctx, false) }

// advanceWatermark passes watermark wm through the chain from operator
// from on, then downstream.
func (t *Task) advanceWatermark(ctx context.Context, from int, wm int64) error {
	for i := from; i < len(t.chain.ops); i++ {
		w, ok := t.chain.ops[i].(dataflow.WatermarkOperator)
		if !ok {
			continue
		}
		var err error
		if wm, err = w.ProcessWatermark(ctx, wm); err != nil {
			return fmt.Errorf("operator %q: watermark: %w", t.chain.ocs[i].Name, err)
		}
		if wm == watermark.MinWatermark {
			return nil
		}
	}
	return t.sendWatermark(ctx, wm)
}

// sendWatermark broadcasts wm to the task's consumers if it is above the
// last one sent; an idle output becomes active first.
func (t *Task) sendWatermark(ctx context.Context, wm int64) error {
	if wm <= t.et.out {
		return nil
	}
	if t.et.outIdle {
		if err := t.sendStatus(ctx, false); err != nil {
			return err
		}
	}
	t.et.out = wm
	t.metrics.OutputWatermark.Store(wm)
	if t.et.valve == nil {
		// A source task has no input channels: its input watermark is
		// the one its sources generate, as Flink's source tasks report.
		t.metrics.InputWatermark.Store(wm)
	}
	for _, w := range t.chain.writers {
		if err := w.Broadcast(ctx, network.Buffer{Kind: network.Watermark, Watermark: wm}); err != nil {
			return fmt.Errorf("send watermark %d: %w", wm, err)
		}
	}
	return nil
}

// sendStatus tells the consumers that the task's output became idle or
// active again, if that changes anything.
func (t *Task) sendStatus(ctx context.Context, idle bool) error {
	if t.et.outIdle == idle {
		return nil
	}
	t.et.outIdle = idle
	for _, w := range t.chain.writers {
		if err := w.Broadcast(ctx, network.Buffer{Kind: network.WatermarkStatus, Idle: idle}); err != nil {
			return fmt.Errorf("send watermark status (idle %v): %w", idle, err)
		}
	}
	return nil
}

// onWatermark feeds a watermark or watermark status polled from channel
// ch to the valve and performs what it answers.
func (t *Task) onWatermark(ctx context.Context, ch int, buf network.Buffer) error {
	var ev watermark.Event
	switch {
	case buf.Kind == network.Watermark:
		ev = watermark.Advance{Ch: ch, TS: buf.Watermark}
	case buf.Idle:
		ev = watermark.Idle{Ch: ch}
	default:
		ev = watermark.Active{Ch: ch}
	}
	for _, a := range t.et.valve.Step(ev) {
		var err error
		switch a := a.(type) {
		case watermark.Emit:
			t.metrics.InputWatermark.Store(a.TS)
			err = t.advanceWatermark(ctx, 0, a.TS)
		case watermark.MarkIdle:
			err = t.sendStatus(ctx, true)
		case watermark.MarkActive:
			err = t.sendStatus(ctx, false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// maybeEmitPeriodic calls the generators' OnPeriodicEmit once their
// period has passed. It runs between batches; one clock read.
func (t *Task) maybeEmitPeriodic(ctx context.Context) error {
	if t.et.nextEmit.IsZero() {
		return nil
	}
	now := t.now()
	if now.Before(t.et.nextEmit) {
		return nil
	}
	t.et.nextEmit = now.Add(t.et.interval)
	for _, g := range t.et.gens {
		if err := g.OnPeriodicEmit(ctx, now); err != nil {
			return fmt.Errorf("periodic watermark: %w", err)
		}
	}
	return nil
}

// endOfBoundedInput sends MaxWatermark through the chain of a source whose
// bounded input ended, before its EndOfData: every event-time timer
// downstream fires.
func (t *Task) endOfBoundedInput(ctx context.Context) error {
	t.et.nextEmit = time.Time{}
	return t.advanceWatermark(ctx, 0, watermark.MaxWatermark)
}
