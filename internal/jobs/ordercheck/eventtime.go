package ordercheck

import (
	"context"
	"fmt"

	"github.com/weirstream/weir"
)

// FlagLate marks a record the check stage received at or behind its
// watermark. Each source subtask's timestamps (its seqs) increase, so with
// monotonous watermarks no record is ever late: a late one means a restore
// brought back a watermark ahead of records it replayed (channel state of
// an unaligned checkpoint, or source positions).
const FlagLate = FlagRegression + 1

// withEventTime stamps each record with its seq as event time and
// monotonous watermarks per source subtask.
func withEventTime(src weir.Stream[Record], parallelism int) weir.Stream[Record] {
	strategy := weir.ForMonotonousTimestamps[Record]().
		WithTimestampAssigner(func(r Record, _ int64) int64 { return r.Seq })
	return weir.AssignTimestampsAndWatermarks(src, strategy).Name("timestamps").UID("timestamps").Parallelism(parallelism)
}

// eventCheck is check plus event time: it flags late records and sets an
// event-time timer at every record's timestamp. Per key, timers must fire
// once each, in increasing order, never ahead of the watermark: the last
// fired timer is keyed state, so a timer fired again after a restore (a
// timer the checkpoint should not have held) or fired out of order counts
// in Store.EventTimeFlags.
type eventCheck struct {
	check
	fired weir.ValueState[int64]
}

func (c *eventCheck) Open(ctx context.Context, kc *weir.KeyedContext[int64]) error {
	if err := c.check.Open(ctx, kc); err != nil {
		return err
	}
	var err error
	c.fired, err = weir.GetValueState[int64](kc, "last-timer")
	return err
}

func (c *eventCheck) ProcessElement(r Record, kc *weir.KeyedContext[int64], out *weir.Collector[Record]) error {
	ts, ok := kc.Timestamp()
	if !ok || ts != r.Seq {
		return fmt.Errorf("ordercheck: record (%d, %d) has timestamp %d (set: %v), want its seq", r.Src, r.Seq, ts, ok)
	}
	if ts <= kc.CurrentWatermark() {
		c.store.late.Add(1)
		// check overrides it with a gap or regression, if either.
		r.Flag = FlagLate
	}
	kc.RegisterEventTimeTimer(ts)
	return c.check.ProcessElement(r, kc, out)
}

func (c *eventCheck) OnTimer(t int64, kc *weir.KeyedContext[int64], _ *weir.Collector[Record]) error {
	c.store.timers.Add(1)
	last, ok := c.fired.Value()
	if ok && t <= last || t > kc.CurrentWatermark() {
		c.store.timerRegressions.Add(1)
	}
	c.fired.Update(t)
	return nil
}

// EventTimeFlags counts, over all attempts, the records the event-time
// check stage received late, the timers it saw fire twice, out of order or
// ahead of the watermark, and all timers fired.
func (s *Store) EventTimeFlags() (late, timerRegressions, timers int64) {
	return s.late.Load(), s.timerRegressions.Load(), s.timers.Load()
}
