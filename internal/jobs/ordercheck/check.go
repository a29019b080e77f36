package ordercheck

import (
	"context"
	"github.com/weirstream/weir"
)

// check keeps the last seq of each key in keyed state and flags every
// record that does not continue it. After a restore the state is the
// checkpoint's and the sources replay from the checkpoint's positions, so
// in exactly-once mode a flag means the two disagree.
type check struct {
	lanes int64
	store *Store
	last  weir.ValueState[int64]
}

func (c *check) Open(ctx context.Context, kc *weir.KeyedContext[int64]) (err error) {
	c.last, err = weir.GetValueState[int64](kc, "last-seq")
	return err
}

func (c *check) ProcessElement(r Record, _ *weir.KeyedContext[int64], out *weir.Collector[Record]) error {
	want := r.Seq % c.lanes
	if last, ok := c.last.Value(); ok {
		want = last + c.lanes
	}
	switch {
	case r.Seq > want:
		r.Flag = FlagGap
		c.store.gaps.Add(1)
	case r.Seq < want:
		r.Flag = FlagRegression
		c.store.regressions.Add(1)
	}
	// Follow the record even when flagged, so that one replay is one
	// regression, not one per replayed record.
	c.last.Update(r.Seq)
	out.Collect(r)
	return nil
}

// pass forwards records; it exists to put a second hash exchange (a second
// barrier alignment) between the check stage and the slow sink.
type pass struct{}

func (pass) Open(context.Context, *weir.KeyedContext[int64]) error { return nil }

func (pass) ProcessElement(r Record, _ *weir.KeyedContext[int64], out *weir.Collector[Record]) error {
	out.Collect(r)
	return nil
}
