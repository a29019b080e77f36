package barrier

import (
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
)

// This file holds deliberately naive reference models of both handlers. They
// keep no state between events: given the whole history of events a handler
// saw, they recompute from scratch, per checkpoint id, the step at which the
// id was snapshotted or aborted, and what is pending and blocked at the end.
// They are written from the rules in the package documentation, not from the
// handlers' code, so that a bug in the incremental bookkeeping of one shows up
// as a disagreement.

// decision is what a handler decided about one checkpoint id, and at which
// step (index into the history) it did.
type decision struct {
	step     int
	id       checkpoint.ID
	snapshot bool // false: aborted
}

// modelResult is the reference outcome of a history.
type modelResult struct {
	decisions  []decision // sorted by step, then id
	pending    checkpoint.ID
	hasPending bool
	blocked    []int
	endOfInput int // step of EndOfInput, -1 if none
}

// eventID returns the checkpoint id an event is about.
func eventID(ev Event) (checkpoint.ID, bool) {
	switch ev := ev.(type) {
	case BarrierArrived:
		return ev.Barrier.ID, true
	case CancelArrived:
		return ev.ID, true
	case AbortRequested:
		return ev.ID, true
	}
	return 0, false
}

func isBarrier(ev Event, id checkpoint.ID) (int, bool) {
	b, ok := ev.(BarrierArrived)
	return b.Channel, ok && b.Barrier.ID == id
}

func isKill(ev Event, id checkpoint.ID) bool {
	switch ev := ev.(type) {
	case CancelArrived:
		return ev.ID == id
	case AbortRequested:
		return ev.ID == id
	}
	return false
}

// endedBy reports whether channel c has an EndOfPartition in h[:i+1].
func endedBy(h []Event, c, i int) bool {
	for _, ev := range h[:i+1] {
		if e, ok := ev.(EndOfPartition); ok && e.Channel == c {
			return true
		}
	}
	return false
}

// deliveredIn reports whether channel c has barrier id in h[from:to+1].
func deliveredIn(h []Event, c int, id checkpoint.ID, from, to int) bool {
	for _, ev := range h[from : to+1] {
		if ch, ok := isBarrier(ev, id); ok && ch == c {
			return true
		}
	}
	return false
}

// completeAt returns the first step i in [from, to) at which every channel
// has delivered barrier id in h[from:i+1] or ended in h[:i+1], and at least
// one barrier of id arrived; -1 if there is none.
func completeAt(h []Event, n int, id checkpoint.ID, from, to int) int {
	for i := from; i < to; i++ {
		some := false
		all := true
		for c := range n {
			d := deliveredIn(h, c, id, from, i)
			some = some || d
			if !d && !endedBy(h, c, i) {
				all = false
			}
		}
		if some && all {
			return i
		}
	}
	return -1
}

// firstMention returns the first step whose event is about id, and whether
// an event about a newer id came before it (then id is ignored entirely).
func firstMention(h []Event, id checkpoint.ID) (first int, ignored bool) {
	for i, ev := range h {
		x, ok := eventID(ev)
		if !ok {
			continue
		}
		if x > id {
			ignored = true
		}
		if x == id {
			return i, ignored
		}
	}
	return -1, true
}

// mentioned returns the ids of all events in h, descending.
func mentioned(h []Event) []checkpoint.ID {
	var ids []checkpoint.ID
	for _, ev := range h {
		if x, ok := eventID(ev); ok && !slices.Contains(ids, x) {
			ids = append(ids, x)
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids
}

func endOfInputAt(h []Event, n int) int {
	for i := range h {
		all := true
		for c := range n {
			all = all && endedBy(h, c, i)
		}
		if all {
			return i
		}
	}
	return -1
}

func (r *modelResult) finish() {
	slices.SortFunc(r.decisions, func(a, b decision) int {
		if a.step != b.step {
			return a.step - b.step
		}
		return int(a.id - b.id)
	})
}

// modelAligned is the reference for Aligned. For each id X not ignored:
// X lives from its first mention until the first event about a newer id.
// Within that window, X snapshots at the first step where all channels
// delivered X or ended, unless a cancel or abort of X came first (then it is
// aborted there); if neither, it is aborted (subsumed) when the window ends,
// or is pending if the history ends first.
func modelAligned(h []Event, n int) modelResult {
	r := modelResult{endOfInput: endOfInputAt(h, n)}
	for _, x := range mentioned(h) {
		first, ignored := firstMention(h, x)
		if ignored {
			continue
		}
		end := len(h)
		for j := first + 1; j < len(h); j++ {
			if y, ok := eventID(h[j]); ok && y > x {
				end = j
				break
			}
		}
		kill := -1
		for j := first; j < end; j++ {
			if isKill(h[j], x) {
				kill = j
				break
			}
		}
		done := completeAt(h, n, x, first, end)
		switch {
		case done >= 0 && (kill < 0 || done < kill):
			r.decisions = append(r.decisions, decision{step: done, id: x, snapshot: true})
		case kill >= 0:
			r.decisions = append(r.decisions, decision{step: kill, id: x})
		case end < len(h):
			r.decisions = append(r.decisions, decision{step: end, id: x})
		default:
			r.pending, r.hasPending = x, true
			last := len(h) - 1
			for c := range n {
				if deliveredIn(h, c, x, first, last) && !endedBy(h, c, last) {
					r.blocked = append(r.blocked, c)
				}
			}
		}
	}
	r.finish()
	return r
}

// modelAtLeastOnce is the reference for AtLeastOnce. For each id X not
// ignored, from its first mention on: X snapshots at the first step where
// all channels delivered X or ended; it is aborted at an earlier cancel or
// abort of X, or at an earlier step where a newer id was decided (snapshot or
// abort). A tie between X completing and a newer id being decided goes to X:
// an end of partition completes the oldest first. Newer ids are decided
// first, so their steps are known when X is looked at.
func modelAtLeastOnce(h []Event, n int) modelResult {
	r := modelResult{endOfInput: endOfInputAt(h, n)}
	decidedAt := map[int]bool{} // steps at which some newer id was decided
	for _, x := range mentioned(h) {
		first, ignored := firstMention(h, x)
		if ignored {
			continue
		}
		done := completeAt(h, n, x, first, len(h))
		kill, other := -1, -1
		for j := first; j < len(h); j++ {
			if kill < 0 && isKill(h[j], x) {
				kill = j
			}
			if other < 0 && decidedAt[j] {
				other = j
			}
		}
		abortAt := kill
		if other >= 0 && (abortAt < 0 || other < abortAt) {
			abortAt = other
		}
		switch {
		case done >= 0 && (kill < 0 || done < kill) && (other < 0 || done <= other):
			r.decisions = append(r.decisions, decision{step: done, id: x, snapshot: true})
			decidedAt[done] = true
		case abortAt >= 0:
			r.decisions = append(r.decisions, decision{step: abortAt, id: x})
			decidedAt[abortAt] = true
		case !r.hasPending:
			r.pending, r.hasPending = x, true
		}
	}
	r.finish()
	return r
}
