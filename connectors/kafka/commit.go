package kafka

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxSnapshotsKept bounds the offsets kept for checkpoints not yet known
// to be complete: notifications may be lost, and a checkpoint may never
// complete.
const maxSnapshotsKept = 8

// commitTimeout bounds one OffsetCommit, and how long Close waits for the
// last one.
const commitTimeout = 5 * time.Second

// snapshotLog remembers the offsets each recent checkpoint took, so that
// the completion of checkpoint id commits exactly what id holds.
type snapshotLog map[int64]map[int32]int64

func (l snapshotLog) add(id int64, offsets map[int32]int64) {
	l[id] = offsets
	for len(l) > maxSnapshotsKept {
		delete(l, slices.Min(slices.Collect(maps.Keys(l))))
	}
}

// complete returns the offsets of checkpoint id (nil if unknown: taken
// before a restore, or dropped) and forgets id and every older checkpoint,
// which id's completion subsumes.
func (l snapshotLog) complete(id int64) map[int32]int64 {
	offsets := l[id]
	for k := range l {
		if k <= id {
			delete(l, k)
		}
	}
	return offsets
}

// committer commits offsets to a consumer group in the background, one
// commit at a time; a newer set of offsets replaces one not yet sent.
type committer struct {
	cl      *kgo.Client
	group   string
	topic   string
	topicID [16]byte
	log     *slog.Logger

	mu     sync.Mutex
	latest map[int32]int64 // not yet sent; nil if none

	wake   chan struct{} // capacity 1
	stopc  chan struct{}
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
}

// ctx is the source's Open context. The committer keeps its values but
// not its cancellation: the task cancels it as it ends, before Close, and
// close still sends the newest offsets; each commit is bounded by
// commitTimeout and close cancels the rest.
func newCommitter(ctx context.Context, cl *kgo.Client, group, topic string, topicID [16]byte, log *slog.Logger) *committer {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &committer{cl: cl, group: group, topic: topic, topicID: topicID, log: log,
		wake: make(chan struct{}, 1), stopc: make(chan struct{}), done: make(chan struct{}), ctx: ctx, cancel: cancel}
	go c.run()
	return c
}

// offer hands offsets over for commit; it never blocks.
func (c *committer) offer(offsets map[int32]int64) {
	c.mu.Lock()
	c.latest = offsets
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *committer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.wake:
			c.flush()
		case <-c.stopc:
			c.flush() // the final checkpoint's offsets, typically
			return
		}
	}
}

// flush commits the latest offsets offered, if any. A failure is logged:
// the group's offsets are for monitoring, and the next checkpoint commits
// newer ones.
func (c *committer) flush() {
	c.mu.Lock()
	offsets := c.latest
	c.latest = nil
	c.mu.Unlock()
	if len(offsets) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, commitTimeout)
	defer cancel()
	if err := commitToGroup(ctx, c.cl, c.group, c.topic, c.topicID, offsets); err != nil {
		c.log.Warn("kafka source: offsets not committed to the consumer group (monitoring only; the checkpoint holds them)", "group", c.group, "err", err)
	}
}

// close commits what was offered last, waiting at most commitTimeout, and
// stops the committer.
func (c *committer) close() {
	close(c.stopc)
	t := time.NewTimer(commitTimeout)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	}
	c.cancel()
	<-c.done
}
