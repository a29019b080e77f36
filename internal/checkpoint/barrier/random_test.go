package barrier

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// item is one entry of a generated input channel: a record, or an event for
// the handler.
type item struct {
	record bool
	ev     Event
}

// genChannels generates n FIFO input channels. For every checkpoint id in
// 1..maxID, each channel carries its barrier, a cancel marker in its place (an
// upstream task declined it), or nothing (an upstream skipped it); records sit
// between the markers, and a channel may end with EndOfPartition.
func genChannels(rng *rand.Rand, n int, maxID checkpoint.ID) [][]item {
	chans := make([][]item, n)
	for c := range chans {
		var q []item
		records := func() {
			for range rng.IntN(3) {
				q = append(q, item{record: true})
			}
		}
		for id := checkpoint.ID(1); id <= maxID; id++ {
			records()
			switch p := rng.IntN(100); {
			case p < 65:
				q = append(q, item{ev: BarrierArrived{Channel: c, Barrier: checkpoint.Barrier{ID: id}}})
			case p < 80:
				q = append(q, item{ev: CancelArrived{Channel: c, ID: id}})
			}
		}
		records()
		if rng.IntN(100) < 60 {
			q = append(q, item{ev: EndOfPartition{Channel: c}})
		}
		chans[c] = q
	}
	return chans
}

// run is the task loop of one randomized interleaving: it reads only channels
// the handler's actions left unblocked, records the events the handler saw
// and the decisions it made, checks the invariants after every step and
// compares with the reference model.
type run struct {
	t       *testing.T
	seed    uint64
	aligned bool
	n       int
	h       Handler

	hist      []Event
	decisions []decision
	gate      []bool          // blocked channels, as the actions say
	ended     []bool          // channels whose EndOfPartition was delivered
	delivered [][]bool        // delivered[c][id]: barrier id read from c
	marker    []checkpoint.ID // newest barrier or cancel id read per channel
	// processed holds, per record processed, the newest marker that preceded
	// it on its channel: a record after barrier N belongs to checkpoint N+1.
	processed  []checkpoint.ID
	endOfInput int
}

func (r *run) fatalf(format string, args ...any) {
	r.t.Helper()
	var b strings.Builder
	for i, ev := range r.hist {
		fmt.Fprintf(&b, "\n  %d: %#v", i, ev)
	}
	r.t.Fatalf("seed %d aligned=%v channels=%d: %s\nhistory:%s", r.seed, r.aligned, r.n, fmt.Sprintf(format, args...), b.String())
}

func (r *run) step(ev Event) {
	r.t.Helper()
	k := len(r.hist)
	r.hist = append(r.hist, ev)
	switch ev := ev.(type) {
	case BarrierArrived:
		r.delivered[ev.Channel][ev.Barrier.ID] = true
		r.marker[ev.Channel] = max(r.marker[ev.Channel], ev.Barrier.ID)
	case CancelArrived:
		r.marker[ev.Channel] = max(r.marker[ev.Channel], ev.ID)
	case EndOfPartition:
		r.ended[ev.Channel] = true
	}
	for _, a := range r.h.Step(ev) {
		switch a := a.(type) {
		case Block:
			if !r.aligned || r.gate[a.Channel] || r.ended[a.Channel] {
				r.fatalf("step %d: unexpected %v", k, a)
			}
			r.gate[a.Channel] = true
		case UnblockAll:
			if !slices.Contains(r.gate, true) {
				r.fatalf("step %d: unblock-all with nothing blocked", k)
			}
			clear(r.gate)
		case Snapshot:
			r.snapshot(k, a.Barrier.ID)
		case Abort:
			r.decisions = append(r.decisions, decision{step: k, id: a.ID})
		case EndOfInput:
			if r.endOfInput >= 0 || slices.Contains(r.ended, false) {
				r.fatalf("step %d: unexpected end-of-input", k)
			}
			r.endOfInput = k
		}
	}
	for c := range r.n {
		if r.h.Blocked(c) != r.gate[c] {
			r.fatalf("step %d: Blocked(%d)=%v, but the actions say %v", k, c, r.h.Blocked(c), r.gate[c])
		}
	}
	r.compareModel()
}

func (r *run) snapshot(k int, id checkpoint.ID) {
	r.t.Helper()
	for _, d := range r.decisions {
		if d.snapshot && d.id >= id {
			r.fatalf("step %d: snapshot %d after snapshot %d", k, id, d.id)
		}
	}
	for c := range r.n {
		if !r.delivered[c][id] && !r.ended[c] {
			r.fatalf("step %d: snapshot %d before channel %d delivered its barrier", k, id, c)
		}
	}
	if r.aligned {
		// Exactly-once: no record that followed barrier id (or a newer
		// marker) on its channel may be in the snapshot.
		for i, m := range r.processed {
			if m >= id {
				r.fatalf("step %d: snapshot %d includes record %d that followed marker %d", k, id, i, m)
			}
		}
	}
	r.decisions = append(r.decisions, decision{step: k, id: id, snapshot: true})
}

func (r *run) compareModel() {
	r.t.Helper()
	var want modelResult
	if r.aligned {
		want = modelAligned(r.hist, r.n)
	} else {
		want = modelAtLeastOnce(r.hist, r.n)
	}
	got := slices.Clone(r.decisions)
	slices.SortFunc(got, func(a, b decision) int {
		if a.step != b.step {
			return a.step - b.step
		}
		return int(a.id - b.id)
	})
	if !slices.Equal(got, want.decisions) {
		r.fatalf("decisions differ:\n got %+v\nwant %+v", got, want.decisions)
	}
	id, ok := r.h.Pending()
	if ok != want.hasPending || (ok && id != want.pending) {
		r.fatalf("Pending()=%d,%v, model says %d,%v", id, ok, want.pending, want.hasPending)
	}
	var blocked []int
	for c, b := range r.gate {
		if b {
			blocked = append(blocked, c)
		}
	}
	if !slices.Equal(blocked, want.blocked) {
		r.fatalf("blocked %v, model says %v", blocked, want.blocked)
	}
	if r.endOfInput != want.endOfInput {
		r.fatalf("end of input at step %d, model says %d", r.endOfInput, want.endOfInput)
	}
}

func randomRun(t *testing.T, seed uint64, aligned bool) {
	rng := rand.New(rand.NewPCG(seed, 0x6261727269657273))
	n := 1 + rng.IntN(4)
	maxID := checkpoint.ID(2 + rng.IntN(6))
	r := &run{
		t: t, seed: seed, aligned: aligned, n: n,
		gate: make([]bool, n), ended: make([]bool, n), marker: make([]checkpoint.ID, n),
		delivered: make([][]bool, n), endOfInput: -1,
	}
	for c := range r.delivered {
		r.delivered[c] = make([]bool, maxID+2)
	}
	if aligned {
		r.h = NewAligned(n)
	} else {
		r.h = NewAtLeastOnce(n)
	}
	chans := genChannels(rng, n, maxID)
	var ready []int
	for {
		// The JobManager aborts a random checkpoint now and then.
		if rng.IntN(100) < 4 {
			r.step(AbortRequested{ID: checkpoint.ID(1 + rng.IntN(int(maxID)+1))})
		}
		ready = ready[:0]
		for c, q := range chans {
			if len(q) > 0 && !r.gate[c] {
				ready = append(ready, c)
			}
		}
		if len(ready) == 0 {
			id, pending := r.h.Pending()
			if !pending || !slices.Contains(r.gate, true) {
				break // every channel drained
			}
			// Every readable channel is drained and the others wait
			// for them: the JobManager's checkpoint timeout aborts
			// the alignment.
			r.step(AbortRequested{ID: id})
			continue
		}
		c := ready[rng.IntN(len(ready))]
		it := chans[c][0]
		chans[c] = chans[c][1:]
		if it.record {
			r.processed = append(r.processed, r.marker[c])
			continue
		}
		r.step(it.ev)
	}
	for c, q := range chans {
		if len(q) > 0 {
			r.fatalf("channel %d not drained: %d items left", c, len(q))
		}
	}
}

// TestRandomAgainstModel drives seeded random interleavings through both
// handlers and compares every step with the reference models. On failure the
// message names the seed and the full history; rerun it with -seed.
func TestRandomAgainstModel(t *testing.T) {
	for _, aligned := range []bool{true, false} {
		coretest.Seeds{N: 1500, Short: 200}.Run(t, func(seed uint64) { randomRun(t, seed, aligned) })
	}
}
