package barrier

import "github.com/weirstream/weir/internal/checkpoint"

// alignment is the bookkeeping of one checkpoint's barriers that both
// exactly-once handlers (Aligned and Unaligned) keep: which channels
// delivered the barrier, how many channels are done, and how many the task
// was told to block.
type alignment struct {
	// first is the checkpoint's barrier as first seen; Snapshot hands it on
	// so the forwarded barrier keeps the source's timestamp and kind.
	first checkpoint.Barrier
	// received[c] is true if channel c delivered the barrier.
	received []bool
	// done counts channels that delivered the barrier or ended; the
	// alignment is complete when it reaches the number of channels.
	done int
	// numBlocked counts channels the task was told to Block and not yet
	// to unblock, so UnblockAll is only returned when it does something.
	numBlocked int
}

func newAlignment(numChannels int) alignment {
	return alignment{received: make([]bool, numChannels)}
}

// begin starts counting the barriers of b; channels that already ended
// count as done.
func (a *alignment) begin(b checkpoint.Barrier, numEnded int) {
	a.first = b
	clear(a.received)
	a.done = numEnded
}

// deliver records the barrier on ch. It returns false for a second barrier
// on one channel: the channel was blocked, so the task should not have
// read it, and counting it twice would complete the alignment early.
func (a *alignment) deliver(ch int) bool {
	if a.received[ch] {
		return false
	}
	a.received[ch] = true
	a.done++
	return true
}

// channelEnded counts ch, which reached its end of partition, as done. A
// channel that had delivered the barrier was blocked; it stays aligned but
// no longer needs unblocking.
func (a *alignment) channelEnded(ch int) {
	if a.received[ch] {
		a.numBlocked--
	} else {
		a.done++
	}
}

// allDone reports whether every channel delivered the barrier or ended.
func (a *alignment) allDone() bool { return a.done == len(a.received) }

// block asks the task to stop reading ch.
func (a *alignment) block(out []Action, ch int) []Action {
	a.numBlocked++
	return append(out, Block{Channel: ch})
}

// unblockAll asks the task to read every channel again, if any is blocked.
func (a *alignment) unblockAll(out []Action) []Action {
	if a.numBlocked > 0 {
		a.numBlocked = 0
		out = append(out, UnblockAll{})
	}
	return out
}
