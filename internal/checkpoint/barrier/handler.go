package barrier

import (
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Handler is the task-side barrier protocol: Aligned (exactly-once) or
// AtLeastOnce. The task loop calls Step for every barrier, cancel marker,
// end of partition and abort request, and performs the returned actions in
// order. The returned slice is owned by the handler and is overwritten by the
// next Step.
//
// Step panics if an event names a channel outside [0, numChannels) or a
// channel that already reached its end of partition: the input gate never
// delivers such events, so one means the runtime is broken.
type Handler interface {
	Step(ev Event) []Action
	// Pending returns the newest checkpoint that has received barriers but
	// is neither snapshotted nor aborted, and whether there is one.
	Pending() (checkpoint.ID, bool)
	// Blocked reports whether the task must not read channel ch.
	Blocked(ch int) bool
}

// Abort reasons. Reasons are for humans (logs, the decline message); the
// task treats every Abort the same way.
const (
	reasonCancelMarker   = "cancel marker on channel %d"
	reasonSubsumed       = "subsumed by %d"
	reasonAbortRequested = "abort requested"
	reasonTooMany        = "too many pending checkpoints"
)

func subsumedBy(id checkpoint.ID) string { return fmt.Sprintf(reasonSubsumed, id) }

func cancelledOn(ch int) string { return fmt.Sprintf(reasonCancelMarker, ch) }

// channels is the per-channel bookkeeping both handlers share: which
// channels reached their end of partition.
type channels struct {
	ended    []bool
	numEnded int
}

func newChannels(kind string, n int) channels {
	if n < 1 {
		// A task without inputs is a source; it injects barriers instead
		// of aligning them and needs no handler.
		panic(fmt.Sprintf("barrier: %s handler needs at least one input channel, got %d", kind, n))
	}
	return channels{ended: make([]bool, n)}
}

// check panics unless ch is a live channel; see Handler.
func (c *channels) check(ch int) {
	if ch < 0 || ch >= len(c.ended) {
		panic(fmt.Sprintf("barrier: event for channel %d, but the task has channels 0..%d", ch, len(c.ended)-1))
	}
	if c.ended[ch] {
		panic(fmt.Sprintf("barrier: event for channel %d after its end of partition; the input gate must not deliver it", ch))
	}
}

// end marks ch ended and reports whether it was the last live channel.
func (c *channels) end(ch int) bool {
	c.check(ch)
	c.ended[ch] = true
	c.numEnded++
	return c.numEnded == len(c.ended)
}
