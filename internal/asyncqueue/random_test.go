package asyncqueue

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestRandomInvariants drives queues of every mode through seeded random
// interleavings of adds, completions, watermarks and snapshot/restore
// cycles, and checks after every Drain:
//
//   - every added record is emitted exactly once, with its own result;
//   - ordered: results in input order; ordered-per-key: per key;
//   - a watermark leaves after every record added before it, and no
//     record added after a watermark leaves before that watermark
//     (fences, in every mode);
//   - the queue never holds more than its capacity (or what a restore
//     gave it), and Add is only called when not Full.
//
// A restore loses the queue's watermarks and completions (the operator
// re-issues the calls): restored records wait for no watermark.
func TestRandomInvariants(t *testing.T) {
	seen := coretest.Outcomes{}
	n := coretest.Seeds{First: 1, N: 500, Short: 100}.Run(t, func(seed uint64) {
		runRandom(t, seed, seen)
	})
	seen.Require(t, n, 10, "full", "restore", "held-by-fence", "held-by-order", "collapsed-watermark")
}

type rec struct {
	key     uint64
	epoch   int   // watermark calls before its Add (or at its restore)
	needWM  int64 // the watermark that must leave before it; noWM if none
	emitted bool
}

const noWM = -1 << 63

func runRandom(t *testing.T, seed uint64, seen coretest.Outcomes) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	mode := Mode(rng.IntN(3))
	capacity := 1 + rng.IntN(6)
	keys := 1 + rng.IntN(4)
	q := New[uint64, string](mode, capacity)
	var log strings.Builder
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (%v cap=%d): %s\nhistory:\n%s", seed, mode, capacity, fmt.Sprintf(format, args...), log.String())
	}
	recs := map[uint64]*rec{}
	var order []uint64    // added seqs in input order (restores keep them)
	var inFlight []uint64 // queued and not completed
	var wmTS []int64      // watermark calls' timestamps
	wmEmittedIdx := -1    // index of the last emitted watermark call
	pendingWM := []int{}  // watermark call indexes queued since the last restore
	lastEmittedRank := -1 // ordered: index in order of the last emitted
	lastPerKey := map[uint64]int{}
	bound := capacity
	var next uint64 = 1
	var ts int64
	var outs []Out[string]
	rank := map[uint64]int{}

	drain := func() {
		outs = q.Drain(outs[:0])
		for _, o := range outs {
			if o.IsWatermark {
				fmt.Fprintf(&log, "  -> wm %d\n", o.Watermark)
				idx := -1
				for i := len(wmTS) - 1; i >= 0; i-- {
					if wmTS[i] == o.Watermark {
						idx = i
						break
					}
				}
				if idx < 0 {
					fail("watermark %d emitted, never added", o.Watermark)
				}
				for _, s := range order {
					if r := recs[s]; r.epoch <= idx && !r.emitted {
						fail("watermark %d left before record %d (added before it)", o.Watermark, s)
					}
				}
				wmEmittedIdx = idx
				continue
			}
			fmt.Fprintf(&log, "  -> emit %d\n", o.Seq)
			r := recs[o.Seq]
			if r == nil || r.emitted {
				fail("seq %d emitted twice or never added", o.Seq)
			}
			if o.Result != fmt.Sprintf("r%d", o.Seq) {
				fail("seq %d emitted with result %q", o.Seq, o.Result)
			}
			if r.needWM != noWM && (wmEmittedIdx < 0 || wmTS[wmEmittedIdx] < r.needWM) {
				fail("seq %d left before watermark %d, which was added before it", o.Seq, r.needWM)
			}
			switch mode {
			case Ordered:
				if rank[o.Seq] < lastEmittedRank {
					fail("ordered: seq %d overtook an earlier record", o.Seq)
				}
				lastEmittedRank = rank[o.Seq]
			case OrderedPerKey:
				if last, ok := lastPerKey[r.key]; ok && rank[o.Seq] < last {
					fail("per key: seq %d of key %d overtook an earlier record of its key", o.Seq, r.key)
				}
				lastPerKey[r.key] = rank[o.Seq]
			}
			r.emitted = true
		}
		if q.Len() > bound {
			fail("queue holds %d records, capacity %d", q.Len(), bound)
		}
		// Completed records still queued are held by a fence or by order.
		for _, s := range order {
			if r := recs[s]; !r.emitted && !contains(inFlight, s) {
				if r.needWM != noWM && (wmEmittedIdx < 0 || wmTS[wmEmittedIdx] < r.needWM) {
					seen["held-by-fence"]++
				} else if mode != Unordered {
					seen["held-by-order"]++
				}
				break
			}
		}
	}

	steps := 20 + rng.IntN(60)
	for range steps {
		switch x := rng.IntN(10); {
		case x < 4 && !q.Full():
			seq := next
			next++
			r := &rec{key: uint64(rng.IntN(keys)), epoch: len(wmTS), needWM: noWM}
			if len(pendingWM) > 0 {
				r.needWM = wmTS[len(wmTS)-1]
			}
			recs[seq] = r
			rank[seq] = len(order)
			order = append(order, seq)
			inFlight = append(inFlight, seq)
			fmt.Fprintf(&log, "add %d key=%d\n", seq, r.key)
			q.Add(seq, r.key, seq)
			drain()
		case x < 8:
			if x < 4 {
				// Full: wait for a completion, as the operator does.
				seen["full"]++
				fmt.Fprintf(&log, "add: full\n")
			}
			if len(inFlight) == 0 {
				break
			}
			i := rng.IntN(len(inFlight))
			seq := inFlight[i]
			inFlight = append(inFlight[:i], inFlight[i+1:]...)
			fmt.Fprintf(&log, "complete %d\n", seq)
			q.Complete(seq, fmt.Sprintf("r%d", seq))
			drain()
		case x < 9:
			ts += int64(rng.IntN(3)) // equal timestamps too
			if len(wmTS) > 0 && ts <= wmTS[len(wmTS)-1] {
				ts = wmTS[len(wmTS)-1] + 1
			}
			if n := len(pendingWM); n > 0 && !q.Empty() {
				// Collapses when nothing was added since the last one.
				last := pendingWM[n-1]
				collapsed := true
				for _, s := range order {
					if recs[s].epoch > last && !recs[s].emitted {
						collapsed = false
					}
				}
				if collapsed {
					seen["collapsed-watermark"]++
				}
			}
			wmTS = append(wmTS, ts)
			pendingWM = append(pendingWM, len(wmTS)-1)
			fmt.Fprintf(&log, "wm %d\n", ts)
			q.Watermark(ts)
			drain()
		default:
			seen["restore"]++
			snap := q.Snapshot(nil)
			newCap := capacity
			if rng.IntN(3) == 0 {
				newCap = 1 + rng.IntN(6)
			}
			fmt.Fprintf(&log, "snapshot+restore: %d records, cap %d\n", len(snap), newCap)
			for i, e := range snap {
				if i > 0 && rank[e.Seq] < rank[snap[i-1].Seq] {
					fail("snapshot not in input order: %d before %d", snap[i-1].Seq, e.Seq)
				}
				if recs[e.Seq].emitted {
					fail("snapshot holds emitted seq %d", e.Seq)
				}
				if e.Input != e.Seq || e.Key != recs[e.Seq].key {
					fail("snapshot entry %+v does not match its record", e)
				}
			}
			for _, s := range order {
				if !recs[s].emitted && !containsEntry(snap, s) {
					fail("snapshot lost seq %d", s)
				}
			}
			capacity = newCap
			bound = max(capacity, len(snap))
			q = New[uint64, string](mode, capacity)
			q.Restore(snap)
			inFlight = inFlight[:0]
			for _, e := range snap {
				inFlight = append(inFlight, e.Seq)
				r := recs[e.Seq]
				r.epoch, r.needWM = len(wmTS), noWM
			}
			pendingWM = pendingWM[:0]
			drain()
		}
		if !q.Full() {
			bound = capacity
		}
	}
	// The end of input: complete everything, drain.
	for len(inFlight) > 0 {
		i := rng.IntN(len(inFlight))
		seq := inFlight[i]
		inFlight = append(inFlight[:i], inFlight[i+1:]...)
		fmt.Fprintf(&log, "complete %d\n", seq)
		q.Complete(seq, fmt.Sprintf("r%d", seq))
		drain()
	}
	if !q.Empty() || q.Len() != 0 || q.InFlight() != 0 {
		fail("queue not empty after every call completed: len=%d in-flight=%d", q.Len(), q.InFlight())
	}
	for _, s := range order {
		if !recs[s].emitted {
			fail("seq %d never emitted", s)
		}
	}
	if coretest.Single() {
		t.Log(log.String())
	}
}

func contains(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func containsEntry(s []Entry[uint64], v uint64) bool {
	for _, e := range s {
		if e.Seq == v {
			return true
		}
	}
	return false
}
