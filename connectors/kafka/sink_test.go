package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/runtime"
)

// sinkUnit drives exactly-once sink instances directly, as the
// two-phase-commit operator would across attempts, without the engine.
type sinkUnit struct {
	t      *testing.T
	b      *broker
	topic  string
	prefix string
	opts   []Option     // more sink options
	log    *slog.Logger // nil: silent
}

func newSinkUnit(t *testing.T) *sinkUnit {
	b := newBroker(t)
	topic := b.topic(t, 2)
	return &sinkUnit{t: t, b: b, topic: topic, prefix: "u-" + topic}
}

func serializeString(v string, r *kgo.Record) error { r.Value = []byte(v); return nil }

// open returns a sink instance of subtask s of p opened with restored.
func (u *sinkUnit) open(s, p int, restored ...*Txn) (*eoSink[string], error) {
	f := ExactlyOnce[string](u.b.addrs, u.topic, serializeString, append([]Option{WithTransactionalIDPrefix(u.prefix), WithPoolSize(4)}, u.opts...)...)
	sink := f().(*eoSink[string])
	u.t.Cleanup(func() { sink.Close(context.Background()) })
	return sink, sink.open(context.Background(), "sink", s, p, u.log, restored)
}

func (u *sinkUnit) mustOpen(s, p int, restored ...*Txn) *eoSink[string] {
	u.t.Helper()
	sink, err := u.open(s, p, restored...)
	if err != nil {
		u.t.Fatalf("open: %v", err)
	}
	return sink
}

// txnWith begins a transaction and writes vs into it.
func (u *sinkUnit) txnWith(sink *eoSink[string], vs ...string) *Txn {
	u.t.Helper()
	txn, err := sink.Begin(context.Background())
	if err != nil {
		u.t.Fatalf("begin: %v", err)
	}
	if err := sink.Write(context.Background(), txn, vs); err != nil {
		u.t.Fatalf("write: %v", err)
	}
	return txn
}

// flushed waits until txn's records reached the broker (a crash after
// that leaves them in an open transaction).
func (u *sinkUnit) flushed(sink *eoSink[string], txn *Txn) *Txn {
	u.t.Helper()
	if err := sink.live[txn].cl.Flush(context.Background()); err != nil {
		u.t.Fatal(err)
	}
	return txn
}

// checkpointed is the handle as a restore decodes it: a copy.
func checkpointed(txn *Txn) *Txn { c := *txn; return &c }

func (u *sinkUnit) wantCommitted(want ...string) {
	u.t.Helper()
	got := u.b.readCommitted(u.t, u.topic)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		u.t.Fatalf("committed records = %q, want %q", got, want)
	}
	if open := u.openTxns(); len(open) > 0 {
		u.t.Fatalf("open transactions at the end: %v", open)
	}
}

func (u *sinkUnit) openTxns() []string {
	var mine []string
	for _, id := range u.b.openTransactions(u.t) {
		if strings.HasPrefix(id, u.prefix+"-") {
			mine = append(mine, id)
		}
	}
	return mine
}

// TestSinkRestoreSameCheckpointTwice: a checkpoint holds T1 pre-committed
// and T2 open. The first restore commits T1, aborts T2, writes T3 and
// crashes before any checkpoint; the second restore of the same checkpoint
// commits T1 again (success: already committed) and aborts T2 again; T3 is
// aborted by the fencing at open. Exactly T1's records are visible.
func TestSinkRestoreSameCheckpointTwice(t *testing.T) {
	u := newSinkUnit(t)
	a := u.mustOpen(0, 1)
	t1 := u.txnWith(a, "a", "b")
	if err := a.PreCommit(context.Background(), t1); err != nil {
		t.Fatal(err)
	}
	t2 := u.flushed(a, u.txnWith(a, "lost-1"))
	ckpt := []*Txn{checkpointed(t1), checkpointed(t2)}
	a.Close(context.Background()) // crash: nothing aborted, the client just goes away

	for attempt := range 2 {
		s := u.mustOpen(0, 1, ckpt...)
		if err := s.Commit(context.Background(), ckpt[0]); err != nil {
			t.Fatalf("attempt %d: commit restored %v: %v", attempt, ckpt[0], err)
		}
		if err := s.Abort(context.Background(), ckpt[1]); err != nil {
			t.Fatalf("attempt %d: abort restored %v: %v", attempt, ckpt[1], err)
		}
		u.flushed(s, u.txnWith(s, fmt.Sprintf("lost-%d", attempt+2)))
		s.Close(context.Background()) // crash before the checkpoint of t3 completes
	}
	// The third restore: the last t3 went to T2's id (free once T2 was
	// aborted), which open leaves alone because the checkpoint names it;
	// the abort of T2 finds the epoch moved on and fences the id.
	s := u.mustOpen(0, 1, ckpt...)
	if err := s.Commit(context.Background(), ckpt[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(context.Background(), ckpt[1]); err != nil {
		t.Fatal(err)
	}
	u.wantCommitted("a", "b")
}

// TestSinkAbortCommittedIsErrAlreadyCommitted: aborting a transaction the
// broker committed fails with weir.ErrAlreadyCommitted (kfake, like Kafka
// with transaction version 2, answers an abort at the epoch before a
// commit's bump with INVALID_TXN_STATE).
func TestSinkAbortCommittedIsErrAlreadyCommitted(t *testing.T) {
	u := newSinkUnit(t)
	a := u.mustOpen(0, 1)
	t1 := u.txnWith(a, "x")
	if err := a.PreCommit(context.Background(), t1); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(context.Background(), t1); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(context.Background(), t1); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	a.Close(context.Background())
	b := u.mustOpen(0, 1, checkpointed(t1))
	if err := b.Abort(context.Background(), checkpointed(t1)); !errors.Is(err, weir.ErrAlreadyCommitted) {
		t.Fatalf("abort of a committed transaction = %v, want ErrAlreadyCommitted", err)
	}
	u.wantCommitted("x")
}

// TestSinkCommitAbortedIsErrTransactionLost: committing a pre-committed
// transaction that was aborted since (by the broker's timeout, here by an
// abort) is data loss, and says so through weir.ErrTransactionLost like
// the other exactly-once sinks, so that callers can test for it.
func TestSinkCommitAbortedIsErrTransactionLost(t *testing.T) {
	u := newSinkUnit(t)
	a := u.mustOpen(0, 1)
	t1 := u.txnWith(a, "x")
	if err := a.PreCommit(context.Background(), t1); err != nil {
		t.Fatal(err)
	}
	a.Close(context.Background())
	b := u.mustOpen(0, 1, checkpointed(t1))
	if err := b.Abort(context.Background(), checkpointed(t1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(context.Background(), checkpointed(t1)); !errors.Is(err, weir.ErrTransactionLost) {
		t.Fatalf("commit of an aborted transaction = %v, want ErrTransactionLost", err)
	}
	u.wantCommitted()
}

// TestSinkEmptyTransaction: a transaction without records is marked Empty
// at pre-commit and commits and aborts as a no-op, in this instance and
// after a restore.
func TestSinkEmptyTransaction(t *testing.T) {
	u := newSinkUnit(t)
	a := u.mustOpen(0, 1)
	t1 := u.txnWith(a)
	if err := a.PreCommit(context.Background(), t1); err != nil {
		t.Fatal(err)
	}
	if !t1.Empty {
		t.Fatal("transaction without records not marked Empty")
	}
	t2 := u.txnWith(a, "y")
	if err := a.PreCommit(context.Background(), t2); err != nil {
		t.Fatal(err)
	}
	if t2.Empty {
		t.Fatal("transaction with a record marked Empty")
	}
	a.Close(context.Background())
	b := u.mustOpen(0, 1, checkpointed(t1), checkpointed(t2))
	for _, txn := range []*Txn{checkpointed(t1), checkpointed(t2)} {
		if err := b.Commit(context.Background(), txn); err != nil {
			t.Fatalf("commit %v: %v", txn, err)
		}
	}
	if err := b.Abort(context.Background(), checkpointed(t1)); err != nil {
		t.Fatalf("abort empty: %v", err)
	}
	u.wantCommitted("y")
}

// TestSinkFencesZombie: an instance of an earlier attempt keeps producing
// after a new attempt opened. The new open fenced its id: the zombie's
// writes fail, its commit reports possible data loss, and none of its
// records become visible.
func TestSinkFencesZombie(t *testing.T) {
	u := newSinkUnit(t)
	zombie := u.mustOpen(0, 1)
	zt := u.txnWith(zombie, "zombie-1")
	next := u.mustOpen(0, 1) // the next attempt, restoring nothing
	err := zombie.Write(context.Background(), zt, []string{"zombie-2"})
	if err == nil {
		err = zombie.PreCommit(context.Background(), zt)
	}
	if err == nil {
		t.Fatal("zombie pre-committed after being fenced")
	}
	// The error class decides what the job does: unrecoverable (a
	// restart would restore the same checkpoint and fail the same
	// commit), not a transaction known lost (an older checkpoint being
	// restored fences the same way).
	if err := zombie.Commit(context.Background(), zt); err == nil || !strings.Contains(err.Error(), "POSSIBLE DATA LOSS") {
		t.Fatalf("zombie commit = %v, want a possible-data-loss error", err)
	} else if !runtime.IsUnrecoverable(err) || errors.Is(err, weir.ErrTransactionLost) || errors.Is(err, weir.ErrAlreadyCommitted) {
		t.Fatalf("zombie commit = %v: unrecoverable %t, lost %t, already committed %t; want unrecoverable only",
			err, runtime.IsUnrecoverable(err), errors.Is(err, weir.ErrTransactionLost), errors.Is(err, weir.ErrAlreadyCommitted))
	}
	// kfake registers the zombie's partition in a transaction at the
	// current epoch before it rejects the stale epoch (Kafka checks first),
	// which leaves an empty transaction open on slot 0 until the next
	// initialization of that id: the next attempt's first Begin.
	nt := u.txnWith(next, "next")
	if nt.Slot != 0 {
		t.Fatalf("next attempt began on slot %d, want 0", nt.Slot)
	}
	if err := next.PreCommit(context.Background(), nt); err != nil {
		t.Fatal(err)
	}
	if err := next.Commit(context.Background(), nt); err != nil {
		t.Fatal(err)
	}
	u.wantCommitted("next")
}

// TestSinkScaleInAbortsVanishedSubtasks: subtask 1 of 2 leaves a
// transaction open that no checkpoint holds; after a restore at
// parallelism 1 the only subtask fences subtask 1's ids too (it learns the
// old parallelism from the restored handles).
func TestSinkScaleInAbortsVanishedSubtasks(t *testing.T) {
	u := newSinkUnit(t)
	s0 := u.mustOpen(0, 2)
	s1 := u.mustOpen(1, 2)
	t0 := u.txnWith(s0, "kept")
	if err := s0.PreCommit(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	t1 := u.txnWith(s1, "orphan")
	if err := s1.PreCommit(context.Background(), t1); err != nil {
		t.Fatal(err)
	}
	u.flushed(s1, u.txnWith(s1, "orphan-open")) // begun after the checkpoint: in no checkpoint
	s0.Close(context.Background())
	s1.Close(context.Background())
	// The checkpoint completed with t0 and t1 pending; restore at p=1.
	r := u.mustOpen(0, 1, checkpointed(t0), checkpointed(t1))
	for _, txn := range []*Txn{checkpointed(t0), checkpointed(t1)} {
		if err := r.Commit(context.Background(), txn); err != nil {
			t.Fatal(err)
		}
	}
	u.wantCommitted("kept", "orphan")
}

// TestSinkScaleInBeforeFirstCheckpoint: a run at p=3 that ends before any
// checkpoint leaves a transaction open under subtask 2's id; a new run at
// p=1 from scratch has no handle saying subtask 2 ever existed, finds its
// ids by asking the coordinators, and fences them, so read_committed
// consumers see its own output instead of waiting for the old
// transaction's timeout.
func TestSinkScaleInBeforeFirstCheckpoint(t *testing.T) {
	u := newSinkUnit(t)
	var old []*eoSink[string]
	for s := range 3 {
		old = append(old, u.mustOpen(s, 3))
	}
	u.flushed(old[2], u.txnWith(old[2], "lingering"))
	for _, s := range old {
		s.Close(context.Background())
	}
	if open := u.openTxns(); len(open) != 1 {
		t.Fatalf("open transactions after the first run: %v, want subtask 2's", open)
	}
	r := u.mustOpen(0, 1)
	txn := u.txnWith(r, "new")
	if err := r.PreCommit(context.Background(), txn); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(context.Background(), checkpointed(txn)); err != nil {
		t.Fatal(err)
	}
	u.wantCommitted("new")
}

// TestSinkPoolExhaustion: with checkpoints that never complete, Begin runs
// out of transactional ids and says so instead of reusing one whose
// transaction is pending.
func TestSinkPoolExhaustion(t *testing.T) {
	u := newSinkUnit(t)
	a := u.mustOpen(0, 1)
	var err error
	for i := 0; i < 5 && err == nil; i++ {
		var txn *Txn
		txn, err = a.Begin(context.Background())
		if err == nil {
			if err = a.Write(context.Background(), txn, []string{"p"}); err == nil {
				err = a.PreCommit(context.Background(), txn)
			}
		}
	}
	if err == nil || !strings.Contains(err.Error(), "all 4 transactional ids are in use (0 open, 4 pre-committed") {
		t.Fatalf("fifth begin with 4 pending = %v, want pool exhaustion", err)
	}
}

// TestSinkValidatesTransactionTimeout: a transaction timeout shorter than
// a checkpoint's life is refused at open.
func TestSinkValidatesTransactionTimeout(t *testing.T) {
	f := ExactlyOnce[string]([]string{"127.0.0.1:1"}, "t", serializeString)
	err := f().(*eoSink[string]).open(context.Background(), "sink", 0, 1, nil, nil)
	if err == nil || strings.Contains(err.Error(), "does not exceed") {
		t.Fatalf("defaults = %v, want only the dial to fail", err)
	}
	f = ExactlyOnce[string]([]string{"127.0.0.1:1"}, "t", serializeString, WithTransactionTimeout(60_000_000_000))
	err = f().(*eoSink[string]).open(context.Background(), "sink", 0, 1, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "does not exceed") {
		t.Fatalf("1 min timeout with a 10 min checkpoint timeout = %v, want refusal", err)
	}
}
