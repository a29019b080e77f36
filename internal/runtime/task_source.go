package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/weirstream/weir/internal/faults"
)

// runSource is the loop of a source task: between batches it handles
// control messages (a checkpoint trigger snapshots the source's offsets and
// injects the barrier right there, between two batches), then reads and
// pushes the next batch. Under backpressure a push does not wait for credit
// inside the batch: the writers overdraw a few batches, and the task waits
// for the debt to be repaid before its next batch, taking triggers
// meanwhile (awaitOutput). So a trigger is handled within one batch, and the
// source position it snapshots covers exactly the records already queued or
// in open batches, which the barrier follows. Only a chain multiplying
// records beyond the overdraft blocks inside the push, and its trigger then
// waits until credit comes.
func (t *Task) runSource(ctx context.Context) error {
	for {
		if t.mail.pending() {
			if err := t.handleMail(ctx); err != nil {
				return err
			}
		}
		if t.ckpt.finished {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.end.done {
			if err := t.waitIdle(ctx, nil); err != nil {
				return err
			}
			if err := t.fireTimers(ctx); err != nil {
				return err
			}
			continue
		}
		if err := t.awaitOutput(ctx, false); err != nil {
			return err
		}
		if t.ckpt.finished || t.end.done {
			continue
		}
		if err := t.faults.Hit(faults.Process); err != nil {
			return err
		}
		readAt := t.now()
		n, err := t.chain.source.Emit(ctx)
		if n == 0 && err == nil {
			// A Read that returned nothing waited inside the connector
			// for input: idle time, not busy.
			t.metrics.busy.addIdle(t.now().Sub(readAt))
		}
		if n > 0 {
			t.metrics.sourceRecords(n)
			t.faults.Progress(int64(n))
		}
		if errors.Is(err, io.EOF) {
			if err := t.endOfBoundedInput(ctx); err != nil {
				return err
			}
			if err := t.endInput(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("source %q: %w", t.chain.ocs[0].Name, err)
		}
		if err := t.fireTimers(ctx); err != nil {
			return err
		}
		if err := t.maybeEmitPeriodic(ctx); err != nil {
			return err
		}
		if err := t.maybeFlush(ctx); err != nil {
			return err
		}
	}
}
