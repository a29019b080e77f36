package runtime

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
)

// chain is what a task drives: its operators in chain order with their
// contexts, the head that feeds them (a source, or the input function of
// a consuming task) and the writers of the last operator's outgoing edges.
type chain struct {
	ops    []dataflow.Operator
	ocs    []*dataflow.OperatorContext
	source dataflow.SourceOperator // head of a source task, else nil
	input  dataflow.InputFunc      // head input of a non-source task
	// byChannel is the input function of each gate channel when the head
	// has inputs of different types (Node.InputsOf), else nil.
	byChannel []dataflow.InputFunc
	writers   []dataflow.Writer
}

// open opens the operators in chain order.
func (c *chain) open(ctx context.Context) error {
	for i, op := range c.ops {
		if err := op.Open(ctx, c.ocs[i]); err != nil {
			return fmt.Errorf("open operator %q: %w", c.ocs[i].Name, err)
		}
	}
	return nil
}

// close closes every operator, whatever the others return. The first
// Close error is returned unless parent was cancelled by then (the job is
// failing over anyway).
func (c *chain) close(parent context.Context) error {
	var first error
	for i, op := range c.ops {
		if err := safeClose(parent, op); err != nil && first == nil && parent.Err() == nil {
			first = fmt.Errorf("close operator %q: %w", c.ocs[i].Name, err)
		}
	}
	return first
}

func safeClose(ctx context.Context, op dataflow.Operator) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("close: %w: %v", ErrUserPanic, r)
		}
	}()
	return op.Close(ctx)
}

// snapshotSync takes the synchronous part of every operator's snapshot of
// checkpoint b in chain order; it returns their asynchronous parts.
func (c *chain) snapshotSync(ctx context.Context, b checkpoint.Barrier) ([]dataflow.AsyncSnapshot, error) {
	asyncs := make([]dataflow.AsyncSnapshot, len(c.ops))
	for i, op := range c.ops {
		a, err := snapshotOperator(ctx, op, b)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %d: snapshot operator %q: %w", b.ID, c.ocs[i].Name, err)
		}
		asyncs[i] = a
	}
	return asyncs, nil
}

// notifyComplete tells every operator that checkpoint id completed.
func (c *chain) notifyComplete(ctx context.Context, id checkpoint.ID) error {
	for i, op := range c.ops {
		if err := op.NotifyCheckpointComplete(ctx, id); err != nil {
			return fmt.Errorf("operator %q: notify checkpoint %d complete: %w", c.ocs[i].Name, id, err)
		}
	}
	return nil
}

// notifyAborted tells every operator that checkpoint id was aborted.
func (c *chain) notifyAborted(id checkpoint.ID) error {
	for i, op := range c.ops {
		if err := op.NotifyCheckpointAborted(id); err != nil {
			return fmt.Errorf("operator %q: notify checkpoint %d aborted: %w", c.ocs[i].Name, id, err)
		}
	}
	return nil
}

// endInput flushes every operator in chain order once the input ended.
func (c *chain) endInput(ctx context.Context) error {
	for i, op := range c.ops {
		if err := op.EndInput(ctx); err != nil {
			return fmt.Errorf("operator %q: end of input: %w", c.ocs[i].Name, err)
		}
	}
	return nil
}

// nextTimer returns the earliest processing-time timer of the chain. Once
// the input ended, timers no longer fire (as in Flink): their output would
// come after EndOfData and after the final checkpoint's barrier, where no
// checkpoint could cover it.
func (t *Task) nextTimer() (int64, bool) {
	if t.end.done {
		return 0, false
	}
	var best int64
	found := false
	for _, op := range t.chain.ops {
		if to, ok := op.(dataflow.TimerOperator); ok {
			if at, ok := to.NextTimer(); ok && (!found || at < best) {
				best, found = at, true
			}
		}
	}
	return best, found
}

// fireTimers fires due processing-time timers of every operator.
func (t *Task) fireTimers(ctx context.Context) error {
	at, ok := t.nextTimer()
	if !ok {
		return nil
	}
	if !t.rec.FiresTimers() {
		return nil
	}
	now := t.now().UnixMilli()
	if at > now {
		return nil
	}
	t.rec.TimersDue(now)
	return t.fireTimersAt(ctx, now)
}

// fireTimersAt fires the processing-time timers due at time now.
func (t *Task) fireTimersAt(ctx context.Context, now int64) error {
	for i, op := range t.chain.ops {
		if to, ok := op.(dataflow.TimerOperator); ok {
			if err := to.FireTimers(ctx, now); err != nil {
				return fmt.Errorf("operator %q: timer: %w", t.chain.ocs[i].Name, err)
			}
		}
	}
	return nil
}
