package runtime

import (
	"context"
	"time"

	"github.com/weirstream/weir/internal/network"
)

// outputFlush is when a task flushes its writers: partly filled batches
// wait at most bufferTimeout, and between batches the task waits out the
// writers' shared debt.
type outputFlush struct {
	// bufferTimeout bounds how long a partly filled output batch waits.
	bufferTimeout time.Duration
	lastFlush     time.Time

	// debt is shared by the task's writers: set while some channel holds
	// more batches than its credits (overdraft), so the task waits for it
	// between batches, handling mail and priority events meanwhile
	// (awaitOutput).
	debt *network.Debt
}

// flush sends every partly filled output batch.
func (t *Task) flush(ctx context.Context) error {
	for _, w := range t.chain.writers {
		if err := w.Flush(ctx); err != nil {
			return err
		}
	}
	t.out.lastFlush = t.now()
	return nil
}

// maybeFlush flushes once the buffer timeout has passed since the last
// flush. It runs once per batch: one clock read.
func (t *Task) maybeFlush(ctx context.Context) error {
	if len(t.chain.writers) == 0 {
		return nil
	}
	if t.out.bufferTimeout > 0 && t.now().Sub(t.out.lastFlush) < t.out.bufferTimeout {
		return nil
	}
	return t.flush(ctx)
}
