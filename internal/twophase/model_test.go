package twophase

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// naive is a deliberately simple reference tracker: a map of pending
// transactions, sorted on every read.
type naive struct {
	pending map[checkpoint.ID]string
	cur     string
	has     bool
}

func (n *naive) ids() []checkpoint.ID {
	var ids []checkpoint.ID
	for id := range n.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (n *naive) state() State[string] {
	s := State[string]{Current: n.cur, HasCurrent: n.has}
	for _, id := range n.ids() {
		s.Pending = append(s.Pending, Pending[string]{ID: id, Txn: n.pending[id]})
	}
	return s
}

func (n *naive) complete(upTo checkpoint.ID) []Pending[string] {
	var out []Pending[string]
	for _, id := range n.ids() {
		if id <= upTo {
			out = append(out, Pending[string]{ID: id, Txn: n.pending[id]})
			delete(n.pending, id)
		}
	}
	return out
}

// txnInfo is the ground truth about one transaction.
type txnInfo struct {
	attempt   int
	preCommit checkpoint.ID // 0 while never pre-committed
	covered   bool          // a completed checkpoint of its attempt covers it
	commits   int           // by Complete or Restore
	completes int           // by Complete only
	aborted   bool
	cleaned   bool // removed as a leftover when the next attempt opened
}

// world drives a Tracker and the naive model through random barriers,
// completions, lost and late notifications, declines and crashes, the way a
// JobManager and a failing task would.
type world struct {
	t        *testing.T
	rng      *rand.Rand
	tr       *Tracker[string]
	model    *naive
	txns     map[string]*txnInfo
	order    []string
	attempt  int
	nextTxn  int
	nextID   checkpoint.ID
	inflight map[checkpoint.ID][]byte // encoded state per triggered checkpoint
	latest   []byte                   // state of the latest completed checkpoint
	latestID checkpoint.ID
	notes    []checkpoint.ID // notifications in transit; they survive crashes
}

func (w *world) fatalf(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf(format, args...)
}

func (w *world) begin() {
	name := fmt.Sprintf("t%d", w.nextTxn)
	w.nextTxn++
	w.txns[name] = &txnInfo{attempt: w.attempt}
	w.order = append(w.order, name)
	w.tr.Begin(name)
	w.model.cur, w.model.has = name, true
}

func (w *world) commit(name string, byComplete bool) {
	w.t.Helper()
	ti := w.txns[name]
	if !ti.covered || ti.aborted || ti.cleaned {
		w.fatalf("commit %s: %+v; only covered, never aborted or cleaned transactions may commit", name, *ti)
	}
	ti.commits++
	if byComplete {
		ti.completes++
		if ti.completes > 1 {
			w.fatalf("commit %s: notify-complete returned it twice", name)
		}
	}
}

func (w *world) abort(name string) {
	w.t.Helper()
	ti := w.txns[name]
	if ti.covered || ti.commits > 0 {
		w.fatalf("abort %s: %+v; only uncovered transactions may abort", name, *ti)
	}
	ti.aborted = true
}

func (w *world) checkState() {
	w.t.Helper()
	if got, want := w.tr.State(), w.model.state(); !reflect.DeepEqual(got, want) {
		w.fatalf("state = %+v, model %+v", got, want)
	}
}

func (w *world) barrier() {
	w.nextID++
	id := w.nextID
	txn, err := w.tr.PreCommit(id)
	if err != nil {
		w.fatalf("pre-commit %d: %v", id, err)
	}
	if txn != w.model.cur {
		w.fatalf("pre-commit %d returned %s, model %s", id, txn, w.model.cur)
	}
	w.model.pending[id] = txn
	w.model.has = false
	w.txns[txn].preCommit = id
	w.begin()
	w.checkState()
	b, err := EncodeState(w.tr.State(), stringCodec{})
	if err != nil {
		w.fatalf("encode state %d: %v", id, err)
	}
	w.inflight[id] = b
}

func (w *world) completeCheckpoint() {
	ids := w.inflightIDs()
	if len(ids) == 0 {
		return
	}
	id := ids[w.rng.IntN(len(ids))]
	w.latest, w.latestID = w.inflight[id], id
	for other := range w.inflight {
		if other <= id { // older in-flight checkpoints are subsumed
			delete(w.inflight, other)
		}
	}
	for _, ti := range w.txns {
		if ti.attempt == w.attempt && ti.preCommit != 0 && ti.preCommit <= id {
			if ti.aborted || ti.cleaned {
				w.fatalf("checkpoint %d covers an aborted or cleaned transaction %+v", id, *ti)
			}
			ti.covered = true
		}
	}
	if w.rng.IntN(10) < 7 { // 30% of notifications are lost
		w.notes = append(w.notes, id)
	}
}

func (w *world) decline() {
	ids := w.inflightIDs()
	if len(ids) > 0 {
		delete(w.inflight, ids[w.rng.IntN(len(ids))])
	}
}

func (w *world) notify() {
	if len(w.notes) == 0 {
		return
	}
	i := w.rng.IntN(len(w.notes))
	id := w.notes[i]
	w.notes = slices.Delete(w.notes, i, i+1)
	got, want := w.tr.Complete(id), w.model.complete(id)
	if !reflect.DeepEqual(got, want) {
		w.fatalf("complete %d = %+v, model %+v", id, got, want)
	}
	for _, p := range got {
		w.commit(p.Txn, true)
	}
	w.checkState()
}

// crash ends the attempt. A soft failure lets the old tracker abort its open
// transaction first (or restores into the same tracker); a hard one loses
// it. The next attempt restores from the latest completed checkpoint and,
// like the file sink's Open, cleans every leftover the restore does not
// commit.
func (w *world) crash() {
	switch w.rng.IntN(3) {
	case 0:
		for _, txn := range w.tr.Abort() {
			w.abort(txn)
		}
		w.tr = NewTracker[string]()
	case 1:
		w.tr = NewTracker[string]()
	case 2: // restore into the same tracker
	}
	w.attempt++
	w.inflight = map[checkpoint.ID][]byte{}
	var st State[string]
	if w.latest != nil {
		var err error
		if st, err = DecodeState(w.latest, stringCodec{}); err != nil {
			w.fatalf("decode state %d: %v", w.latestID, err)
		}
	}
	wantAbort := []string(nil)
	if w.model.has && w.tr.hasCurrent {
		wantAbort = append(wantAbort, w.model.cur)
	}
	if st.HasCurrent {
		wantAbort = append(wantAbort, st.Current)
	}
	var wantCommit []string
	for _, p := range st.Pending {
		wantCommit = append(wantCommit, p.Txn)
	}
	commit, abort := w.tr.Restore(st)
	if !slices.Equal(commit, wantCommit) || !slices.Equal(abort, wantAbort) {
		w.fatalf("restore %d = commit %v abort %v, want %v %v", w.latestID, commit, abort, wantCommit, wantAbort)
	}
	for _, txn := range commit {
		w.commit(txn, false)
	}
	for _, txn := range abort {
		w.abort(txn)
	}
	for _, name := range w.order {
		if ti := w.txns[name]; ti.commits == 0 && !ti.aborted && !ti.cleaned {
			if ti.covered {
				w.fatalf("restore %d: covered transaction %s neither committed nor restored; its data would be lost", w.latestID, name)
			}
			ti.cleaned = true
		}
	}
	w.model = &naive{pending: map[checkpoint.ID]string{}}
	w.checkState()
	w.begin()
}

func (w *world) inflightIDs() []checkpoint.ID {
	var ids []checkpoint.ID
	for id := range w.inflight {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TestRandomAgainstModel checks, over seeded random runs, that the tracker
// matches the naive model step by step and that every transaction ends
// exactly one way: committed (only once by notify-complete, possibly again
// by restores, which is why commit is idempotent), aborted, or cleaned as an
// uncovered leftover; and that a transaction commits if and only if a
// completed checkpoint covers it.
func TestRandomAgainstModel(t *testing.T) {
	coretest.Seeds{First: 1, N: 300}.Run(t, func(seed uint64) {
		w := &world{
			t:        t,
			rng:      rand.New(rand.NewPCG(seed, 7)),
			tr:       NewTracker[string](),
			model:    &naive{pending: map[checkpoint.ID]string{}},
			txns:     map[string]*txnInfo{},
			inflight: map[checkpoint.ID][]byte{},
		}
		w.begin()
		for range 200 {
			switch r := w.rng.IntN(100); {
			case r < 35:
				w.barrier()
			case r < 55:
				w.completeCheckpoint()
			case r < 62:
				w.decline()
			case r < 90:
				w.notify()
			default:
				w.crash()
			}
		}
		w.crash() // settle: the final restore commits every covered transaction
		for _, txn := range w.tr.Abort() {
			w.abort(txn)
		}
		for _, name := range w.order {
			ti := w.txns[name]
			outcomes := 0
			for _, b := range []bool{ti.commits > 0, ti.aborted, ti.cleaned} {
				if b {
					outcomes++
				}
			}
			if outcomes != 1 {
				t.Fatalf("seed %d: %s ended %d ways: %+v", seed, name, outcomes, *ti)
			}
			if ti.covered != (ti.commits > 0) {
				t.Fatalf("seed %d: %s covered=%v but committed %d times", seed, name, ti.covered, ti.commits)
			}
		}
	})
}
