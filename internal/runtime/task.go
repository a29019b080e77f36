package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/network"
)

// JobGateway is the task's view of the JobManager. In local mode it is a
// channel into the JobManager's loop; in cluster mode an RPC client. Its
// methods must not block for long.
type JobGateway interface {
	Acknowledge(task checkpoint.TaskID, id checkpoint.ID, st checkpoint.TaskState)
	Decline(task checkpoint.TaskID, id checkpoint.ID, reason string, storage bool)
	// EndOfData reports that the task consumed all input and flushed its
	// output; the final checkpoint is triggered once every task did.
	EndOfData(task checkpoint.TaskID)
}

// Task runs one subtask of a vertex: a mailbox loop over its input gate
// (or its source) driving the operator chain. Its state is grouped by
// idea, each group a value field (no indirection on the loop's path): the
// chain it drives, its checkpointing side, the unaligned checkpoint
// recording, the end of its input and the flushing of its output.
type Task struct {
	ID    checkpoint.TaskID
	Name  string
	chain chain
	gate  *network.Gate // nil for sources
	// links are the execution's remote channels (nil in tests that build
	// tasks by hand): Prioritize reaches remote producers through them.
	links   *taskLinks
	mail    *mailbox
	mails   []mail // reused by handleMail
	gw      JobGateway
	faults  *faults.Injector
	logger  *slog.Logger
	now     func() time.Time
	metrics *TaskMetrics

	// (Ordered as the fields were before the grouping, the ones read per
	// batch first.)
	ckpt   checkpointing
	out    outputFlush
	ua     unalignedState
	end    inputEnd
	align  alignStats // checkpoint metrics (task_stats.go)
	replay channelReplay
	et     eventTime // watermarks (task_eventtime.go)
	rec    Recovery  // the consistency mode's part in the loop (task_recovery.go)
}

// StateWriterFactory gives a StateWriter for one checkpoint.
type StateWriterFactory interface {
	ForCheckpoint(id checkpoint.ID) dataflow.StateWriter
}

// ErrUserPanic marks a task failure caused by a panic in user code.
var ErrUserPanic = errors.New("panic in user code")

// Run executes the task until it finishes (after the final checkpoint), fails
// or ctx is cancelled. It always waits for its asynchronous snapshot
// goroutines and closes its operators before returning, so a failed-over job
// leaves nothing running behind.
func (t *Task) Run(parent context.Context) (err error) {
	start := t.now()
	ctx, cancel := context.WithCancel(parent)
	defer func() {
		cancel()
		if t.ua.rec != nil {
			t.ua.rec.abort()
			t.ua.rec = nil
		}
		t.ckpt.asyncWG.Wait()
		if cerr := t.chain.close(parent); cerr != nil && err == nil {
			err = fmt.Errorf("task %s#%d: %w", t.Name, t.ID.Subtask, cerr)
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("task %s (%d/%d): %w: %v\n%s", t.Name, t.ID.Subtask, t.ID.Vertex, ErrUserPanic, r, debug.Stack())
		}
	}()
	if err := t.chain.open(ctx); err != nil {
		return err
	}
	t.restored(start)
	t.metrics.busy.start(t.now())
	if t.chain.source != nil {
		err = t.runSource(ctx)
	} else {
		err = t.runInput(ctx)
	}
	if err != nil {
		return fmt.Errorf("task %s#%d: %w", t.Name, t.ID.Subtask, err)
	}
	return nil
}

// handleMail processes all queued control messages.
func (t *Task) handleMail(ctx context.Context) error {
	t.mails = t.mail.take(t.mails[:0])
	for _, m := range t.mails {
		switch m.kind {
		case mailTrigger:
			if err := t.snapshot(ctx, m.barrier, false); err != nil {
				return err
			}
		case mailNotifyComplete:
			if err := t.notifyComplete(ctx, m.id, m.ckind, m.ckindKnown); err != nil {
				return err
			}
		case mailNotifyAborted:
			if err := t.notifyAborted(ctx, m.id); err != nil {
				return err
			}
		case mailAsyncFailed:
			return m.err
		case mailRun:
			if err := m.run(ctx); err != nil {
				return err
			}
		case mailStop:
			if t.chain.source != nil && !t.end.done {
				if err := t.endInput(ctx); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// endInput finishes the chain after all input is consumed: every operator
// flushes in chain order, then EndOfData goes downstream and to the
// JobManager.
func (t *Task) endInput(ctx context.Context) error {
	if err := t.chain.endInput(ctx); err != nil {
		return err
	}
	for _, w := range t.chain.writers {
		if err := w.Broadcast(ctx, network.Buffer{Kind: network.EndOfData}); err != nil {
			return fmt.Errorf("send end of data: %w", err)
		}
	}
	t.end.done = true
	t.gw.EndOfData(t.ID)
	return nil
}

// processingTimerPoll is the longest an idle task with a processing-time
// timer waits before it reads the wall clock again, the bound on how late
// a timer fires after the wall clock jumps forward past it.
const processingTimerPoll = time.Second

// waitIdle blocks until a control message, input, a timer or cancellation.
func (t *Task) waitIdle(ctx context.Context, gateReady <-chan struct{}) error {
	var timerC <-chan time.Time
	var wake time.Time
	if at, ok := t.nextTimer(); ok {
		// Processing-time timers are wall-clock instants, but the wait
		// for one is a monotonic duration, capped so that a step of the
		// wall clock is noticed: after a jump forward the timers it
		// passed fire within processingTimerPoll, not when the wait
		// computed before the jump ends; after a jump back they wait
		// until the wall clock reaches them again (docs/event-time.md).
		now := t.now()
		d := time.Duration(at-now.UnixMilli()) * time.Millisecond
		wake = now.Add(min(max(d, 0), processingTimerPoll))
	}
	if len(t.chain.writers) > 0 && t.out.bufferTimeout > 0 && !t.end.done {
		// (After EndOfData the writers are flushed and stay empty: no
		// wake-ups, or an ended source would spin until the final
		// checkpoint completes.)
		// Wake when the buffer timeout expires, so that a partly filled
		// batch does not wait for the next input.
		if flushAt := t.out.lastFlush.Add(t.out.bufferTimeout); wake.IsZero() || flushAt.Before(wake) {
			wake = flushAt
		}
	}
	if !t.ua.alignAt.IsZero() && (wake.IsZero() || t.ua.alignAt.Before(wake)) {
		wake = t.ua.alignAt
	}
	if at := t.et.nextEmit; !at.IsZero() && !t.end.done && (wake.IsZero() || at.Before(wake)) {
		wake = at
	}
	if !wake.IsZero() {
		d := wake.Sub(t.now())
		if d <= 0 {
			return nil
		}
		tm := time.NewTimer(d)
		defer tm.Stop()
		timerC = tm.C
	}
	t.metrics.busy.beginIdle(t.now())
	defer func() { t.metrics.busy.endIdle(t.now()) }()
	select {
	case <-t.mail.ready:
	case <-gateReady:
	case <-timerC:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
