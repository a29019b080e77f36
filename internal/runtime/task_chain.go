package runtime

import (
	"context"
	"fmt"
)

// chain is what a task drives: its operators in chain order with their
// contexts, the head that feeds them (a source, or the input function of
// a consuming task) and the writers of the last operator's outgoing edges.
type chain struct {
	ops     []Operator
	ocs     []*OperatorContext
	source  SourceOperator // head of a source task, else nil
	input   InputFunc      // head input of a non-source task
	writers []Writer
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
		if to, ok := op.(TimerOperator); ok {
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
	now := t.now().UnixMilli()
	if at > now {
		return nil
	}
	for i, op := range t.chain.ops {
		if to, ok := op.(TimerOperator); ok {
			if err := to.FireTimers(ctx, now); err != nil {
				return fmt.Errorf("operator %q: timer: %w", t.chain.ocs[i].Name, err)
			}
		}
	}
	return nil
}
