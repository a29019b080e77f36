package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/barrier"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/network"
)

// JobGateway is the task's view of the JobManager. In local mode it is a
// channel into the JobManager's loop; in cluster mode an RPC client. Its
// methods must not block for long.
type JobGateway interface {
	Acknowledge(task checkpoint.TaskID, id checkpoint.ID, st checkpoint.TaskState)
	Decline(task checkpoint.TaskID, id checkpoint.ID, reason string)
	// EndOfData reports that the task consumed all input and flushed its
	// output; the final checkpoint is triggered once every task did.
	EndOfData(task checkpoint.TaskID)
}

// Task runs one subtask of a vertex: a mailbox loop over its input gate
// (or its source) driving the operator chain.
type Task struct {
	ID     checkpoint.TaskID
	Name   string
	ops    []Operator
	ocs    []*OperatorContext
	source SourceOperator // head of a source task, else nil
	input  InputFunc      // head input of a non-source task
	gate   *network.Gate  // nil for sources
	// writers are the outgoing edges of the chain's last operator.
	writers []Writer
	// links are the execution's remote channels (nil in tests that build
	// tasks by hand): Prioritize reaches remote producers through them.
	links   *taskLinks
	handler barrier.Handler
	mail    *mailbox
	gw      JobGateway
	store   StateWriterFactory
	faults  *faults.Injector
	logger  *slog.Logger
	now     func() time.Time
	metrics *TaskMetrics

	asyncWG sync.WaitGroup

	// bufferTimeout bounds how long a partly filled output batch waits.
	bufferTimeout time.Duration
	lastFlush     time.Time

	// debt is shared by the task's writers: set while some channel holds
	// more batches than its credits (overdraft), so the task waits for it
	// between batches, handling mail and priority events meanwhile.
	debt *network.Debt

	// Unaligned checkpoints (see task_channelstate.go).
	unaligned bool // the job takes unaligned checkpoints
	// priorityTriggers: a source sends periodic barriers as priority
	// events (pure unaligned mode, no alignment timeout).
	priorityTriggers bool
	chans            []channelInfo // per gate channel, when unaligned
	rec              *channelRecorder
	maxChannelState  int64
	alignAt          time.Time // alignment timer, zero when not armed
	alignID          checkpoint.ID
	overtaken        []any
	// lastSeq[c] is the Seq of the last data buffer polled from gate
	// channel c (unaligned checkpoints: what a priority barrier overtook).
	lastSeq []uint64
	align   alignStats // checkpoint metrics (task_stats.go)
	// abortRecording is a checkpoint whose channel state overflowed; it is
	// aborted once the current handler actions are performed.
	abortRecording checkpoint.ID
	// replay is the channel state to process before the gate (restore of
	// an unaligned checkpoint); openState reads it.
	replay    *checkpoint.ChannelStateHandle
	openState func(ctx context.Context, f checkpoint.StateFile) (io.ReadCloser, error)

	// checkpoint progress, touched by the task goroutine only
	finalID       checkpoint.ID // id of the final checkpoint snapshotted, 0 if none
	completedUpTo checkpoint.ID
	endOfData     bool // EndInput done and EndOfData sent
	eod           []bool
	eodCount      int
	finished      bool
	mails         []mail
}

// StateWriterFactory gives a StateWriter for one checkpoint.
type StateWriterFactory interface {
	ForCheckpoint(id checkpoint.ID) StateWriter
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
		if t.rec != nil {
			t.rec.abort()
			t.rec = nil
		}
		t.asyncWG.Wait()
		for i, op := range t.ops {
			// A Close error matters unless the task was cancelled from
			// outside (then the job is failing over anyway).
			if cerr := safeClose(parent, op); cerr != nil && err == nil && parent.Err() == nil {
				err = fmt.Errorf("task %s#%d: close operator %q: %w", t.Name, t.ID.Subtask, t.ocs[i].Name, cerr)
			}
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("task %s (%d/%d): %w: %v\n%s", t.Name, t.ID.Subtask, t.ID.Vertex, ErrUserPanic, r, debug.Stack())
		}
	}()
	for i, op := range t.ops {
		if err := op.Open(ctx, t.ocs[i]); err != nil {
			return fmt.Errorf("open operator %q: %w", t.ocs[i].Name, err)
		}
	}
	t.restored(start)
	if t.source != nil {
		err = t.runSource(ctx)
	} else {
		err = t.runInput(ctx)
	}
	if err != nil {
		return fmt.Errorf("task %s#%d: %w", t.Name, t.ID.Subtask, err)
	}
	return nil
}

func safeClose(ctx context.Context, op Operator) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("close: %w: %v", ErrUserPanic, r)
		}
	}()
	return op.Close(ctx)
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
			if err := t.notifyComplete(ctx, m.id); err != nil {
				return err
			}
		case mailNotifyAborted:
			if err := t.notifyAborted(ctx, m.id); err != nil {
				return err
			}
		case mailAsyncFailed:
			return m.err
		case mailStop:
			if t.source != nil && !t.endOfData {
				if err := t.endInput(ctx); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (t *Task) notifyComplete(ctx context.Context, id checkpoint.ID) error {
	if id <= t.completedUpTo {
		return nil
	}
	t.completedUpTo = id
	for i, op := range t.ops {
		if err := op.NotifyCheckpointComplete(ctx, id); err != nil {
			return fmt.Errorf("operator %q: notify checkpoint %d complete: %w", t.ocs[i].Name, id, err)
		}
	}
	if t.finalID != 0 && id >= t.finalID {
		t.finished = true
	}
	return nil
}

func (t *Task) notifyAborted(ctx context.Context, id checkpoint.ID) error {
	if t.handler != nil {
		if err := t.perform(ctx, nil, t.handler.Step(barrier.AbortRequested{ID: id})); err != nil {
			return err
		}
	}
	for i, op := range t.ops {
		if err := op.NotifyCheckpointAborted(id); err != nil {
			return fmt.Errorf("operator %q: notify checkpoint %d aborted: %w", t.ocs[i].Name, id, err)
		}
	}
	return nil
}

// snapshot takes the task's part of checkpoint b: the synchronous part of
// every operator in chain order, then the barrier goes downstream, then the
// asynchronous parts run on their own goroutine and acknowledge. An
// unaligned snapshot also starts recording channel state (t.rec, filled by
// the barrier handler's recording actions); its goroutine acknowledges once
// the recording is complete, with the handle on the head operator's state.
func (t *Task) snapshot(ctx context.Context, b checkpoint.Barrier, unaligned bool) error {
	if err := t.faults.Hit(faults.SnapshotSync); err != nil {
		return fmt.Errorf("checkpoint %d synchronous snapshot: %w", b.ID, err)
	}
	start := t.now()
	asyncs := make([]AsyncSnapshot, len(t.ops))
	for i, op := range t.ops {
		a, err := snapshotOperator(ctx, op, b)
		if err != nil {
			return fmt.Errorf("checkpoint %d: snapshot operator %q: %w", b.ID, t.ocs[i].Name, err)
		}
		asyncs[i] = a
	}
	// A priority barrier overtakes what the consumers have queued; sources
	// send one in pure unaligned mode, any task once it snapshotted
	// unaligned. Final checkpoints and savepoints are always aligned.
	priority := unaligned || t.priorityTriggers && t.source != nil && b.Kind == checkpoint.Periodic
	for _, w := range t.writers {
		var err error
		if priority {
			err = w.BroadcastPriority(network.Buffer{Kind: network.Barrier, Barrier: b})
		} else {
			err = w.Broadcast(ctx, network.Buffer{Kind: network.Barrier, Barrier: b})
		}
		if err != nil {
			return fmt.Errorf("checkpoint %d: forward barrier: %w", b.ID, err)
		}
	}
	if b.Kind == checkpoint.Final {
		t.finalID = b.ID
	}
	t.metrics.syncSnapshot(t.now().Sub(start))
	metrics := t.snapshotMetrics(b, unaligned)
	sw := t.store.ForCheckpoint(b.ID)
	var rec *channelRecorder
	if unaligned {
		if t.rec != nil {
			// The handler aborts a pending checkpoint before it snapshots a
			// newer one; a recorder left over means that order broke.
			return fmt.Errorf("checkpoint %d: unaligned snapshot while checkpoint %d still records channel state", b.ID, t.rec.id)
		}
		rec = newChannelRecorder(ctx, b.ID, t.chans, t.maxChannelState, t.faults, sw, channelStateFileName(t.ocs[0].UID, t.ID.Subtask), &t.asyncWG)
		if t.metrics.job != nil {
			rec.remoteBytes = &t.metrics.job.RecordedRemoteChannelStateBytes
		}
		t.rec = rec
	}
	t.asyncWG.Add(1)
	go func() {
		defer t.asyncWG.Done()
		st, err := t.runAsync(ctx, b.ID, asyncs, sw)
		if err == nil && rec != nil {
			err = t.attachChannelState(ctx, rec, &st)
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return // cancelled: the job is failing over anyway
		case errors.Is(err, errRecorderAborted):
			return // the abort declined the checkpoint already
		case errors.Is(err, faults.ErrInjected) || errors.Is(err, ErrUserPanic):
			// A simulated crash, or a bug in user code: the task fails.
			t.mail.put(mail{kind: mailAsyncFailed, err: fmt.Errorf("checkpoint %d asynchronous snapshot: %w", b.ID, err)})
			return
		default:
			// Writing failed (disk full, storage unreachable): only this
			// checkpoint fails, as in Flink; the coordinator's tolerable
			// failure count decides whether the job fails over.
			t.logger.Warn("declining checkpoint: asynchronous snapshot failed", "checkpoint", b.ID, "err", err)
			t.gw.Decline(t.ID, b.ID, fmt.Sprintf("task %s#%d: asynchronous snapshot: %v", t.Name, t.ID.Subtask, err))
			return
		}
		// (An unaligned snapshot's metrics were completed before its
		// recorder's result was published.)
		st.Metrics = *metrics
		t.gw.Acknowledge(t.ID, b.ID, st)
	}()
	return nil
}

func (t *Task) runAsync(ctx context.Context, id checkpoint.ID, asyncs []AsyncSnapshot, sw StateWriter) (st checkpoint.TaskState, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrUserPanic, r, debug.Stack())
		}
	}()
	st.Task = t.ID
	for i, a := range asyncs {
		if a == nil {
			continue
		}
		os, err := a(ctx, sw)
		if err != nil {
			// The remaining parts still run, on a cancelled context, so
			// that each releases its copy-on-write snapshot; left alone,
			// they would make every later write copy its key group.
			dead, cancel := context.WithCancel(ctx)
			cancel()
			for _, rest := range asyncs[i+1:] {
				if rest != nil {
					_, _ = rest(dead, sw)
				}
			}
			return st, fmt.Errorf("operator %q: %w", t.ocs[i].Name, err)
		}
		if os.UID == "" {
			os.UID = t.ocs[i].UID
		}
		st.Operators = append(st.Operators, os)
	}
	if err := t.faults.Hit(faults.SnapshotAsync); err != nil {
		return st, err
	}
	return st, nil
}

// endInput finishes the chain after all input is consumed: every operator
// flushes in chain order, then EndOfData goes downstream and to the
// JobManager.
func (t *Task) endInput(ctx context.Context) error {
	for i, op := range t.ops {
		if err := op.EndInput(ctx); err != nil {
			return fmt.Errorf("operator %q: end of input: %w", t.ocs[i].Name, err)
		}
	}
	for _, w := range t.writers {
		if err := w.Broadcast(ctx, network.Buffer{Kind: network.EndOfData}); err != nil {
			return fmt.Errorf("send end of data: %w", err)
		}
	}
	t.endOfData = true
	t.gw.EndOfData(t.ID)
	return nil
}

// flush sends every partly filled output batch.
func (t *Task) flush(ctx context.Context) error {
	for _, w := range t.writers {
		if err := w.Flush(ctx); err != nil {
			return err
		}
	}
	t.lastFlush = t.now()
	return nil
}

// maybeFlush flushes once the buffer timeout has passed since the last
// flush. It runs once per batch: one clock read.
func (t *Task) maybeFlush(ctx context.Context) error {
	if len(t.writers) == 0 {
		return nil
	}
	if t.bufferTimeout > 0 && t.now().Sub(t.lastFlush) < t.bufferTimeout {
		return nil
	}
	return t.flush(ctx)
}

// waitIdle blocks until a control message, input, a timer or cancellation.
func (t *Task) waitIdle(ctx context.Context, gateReady <-chan struct{}) error {
	var timerC <-chan time.Time
	var wake time.Time
	if at, ok := t.nextTimer(); ok {
		wake = time.UnixMilli(at)
	}
	if len(t.writers) > 0 && t.bufferTimeout > 0 && !t.endOfData {
		// (After EndOfData the writers are flushed and stay empty: no
		// wake-ups, or an ended source would spin until the final
		// checkpoint completes.)
		// Wake when the buffer timeout expires, so that a partly filled
		// batch does not wait for the next input.
		if flushAt := t.lastFlush.Add(t.bufferTimeout); wake.IsZero() || flushAt.Before(wake) {
			wake = flushAt
		}
	}
	if !t.alignAt.IsZero() && (wake.IsZero() || t.alignAt.Before(wake)) {
		wake = t.alignAt
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
	select {
	case <-t.mail.ready:
	case <-gateReady:
	case <-timerC:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// nextTimer returns the earliest processing-time timer of the chain. Once
// the input ended, timers no longer fire (as in Flink): their output would
// come after EndOfData and after the final checkpoint's barrier, where no
// checkpoint could cover it.
func (t *Task) nextTimer() (int64, bool) {
	if t.endOfData {
		return 0, false
	}
	var best int64
	found := false
	for _, op := range t.ops {
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
	for i, op := range t.ops {
		if to, ok := op.(TimerOperator); ok {
			if err := to.FireTimers(ctx, now); err != nil {
				return fmt.Errorf("operator %q: timer: %w", t.ocs[i].Name, err)
			}
		}
	}
	return nil
}
