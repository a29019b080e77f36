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
// pushes the next batch. A backpressured output blocks inside the push;
// triggers wait in the mailbox meanwhile, as barriers queue behind data.
func (t *Task) runSource(ctx context.Context) error {
	for {
		if t.mail.pending() {
			if err := t.handleMail(ctx); err != nil {
				return err
			}
		}
		if t.finished {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.endOfData {
			if err := t.waitIdle(ctx, nil); err != nil {
				return err
			}
			if err := t.fireTimers(ctx); err != nil {
				return err
			}
			continue
		}
		if err := t.faults.Hit(faults.Process); err != nil {
			return err
		}
		n, err := t.source.Emit(ctx)
		if n > 0 {
			t.metrics.sourceRecords(n)
			t.faults.Progress(int64(n))
		}
		if errors.Is(err, io.EOF) {
			if err := t.endInput(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("source %q: %w", t.ocs[0].Name, err)
		}
		if err := t.fireTimers(ctx); err != nil {
			return err
		}
		if err := t.maybeFlush(ctx); err != nil {
			return err
		}
	}
}
