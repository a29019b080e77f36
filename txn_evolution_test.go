package weir_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testutil"
)

// Transaction handles of a two-phase-commit sink are checkpointed with the
// schema of their type, so a sink whose handle type changed between a
// savepoint and its restore (a connector upgrade) still reads them.

// txnV1 is the handle the first version of the sink writes.
type txnV1 struct {
	ID    string
	Lines int32
}

// txnV2 widens Lines and adds a field: the savepoint's handles resolve.
type txnV2 struct {
	ID    string
	Lines int64
	Note  string
}

// txnV3 changes ID's kind: the handles cannot be read.
type txnV3 struct {
	ID    int64
	Lines int64
}

// memTxnSink is an in-memory two-phase-commit sink generic over its
// handle; mk makes a handle from an id and a line count, id reads a
// handle's id back.
type memTxnSink[TXN any] struct {
	mk      func(id string, lines int) TXN
	id      func(TXN) string
	log     *txnLog
	subtask int
	next    int
	open    map[string][]string
}

// txnLog records what every subtask of a memTxnSink did.
type txnLog struct {
	mu        sync.Mutex
	begun     []string
	committed map[string][]string
	restored  []string
	pending   map[string][]string // pre-committed, by id
}

func newTxnLog() *txnLog {
	return &txnLog{committed: map[string][]string{}, pending: map[string][]string{}}
}

func (s *memTxnSink[TXN]) Open(_ context.Context, rc *weir.RuntimeContext, restored []TXN) error {
	s.subtask, s.open = rc.Subtask(), map[string][]string{}
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	for _, txn := range restored {
		s.log.restored = append(s.log.restored, s.id(txn))
	}
	return nil
}

func (s *memTxnSink[TXN]) Begin(context.Context) (TXN, error) {
	s.next++
	id := fmt.Sprintf("s%d-%d-%d", s.subtask, time.Now().UnixNano(), s.next)
	s.log.mu.Lock()
	s.log.begun = append(s.log.begun, id)
	s.log.mu.Unlock()
	s.open[id] = nil
	return s.mk(id, 0), nil
}

func (s *memTxnSink[TXN]) Write(_ context.Context, txn TXN, batch []string) error {
	s.open[s.id(txn)] = append(s.open[s.id(txn)], batch...)
	return nil
}

func (s *memTxnSink[TXN]) PreCommit(_ context.Context, txn TXN) error {
	s.log.mu.Lock()
	s.log.pending[s.id(txn)] = s.open[s.id(txn)]
	s.log.mu.Unlock()
	delete(s.open, s.id(txn))
	return nil
}

func (s *memTxnSink[TXN]) Commit(_ context.Context, txn TXN) error {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	if lines, ok := s.log.pending[s.id(txn)]; ok {
		s.log.committed[s.id(txn)] = lines
		delete(s.log.pending, s.id(txn))
	}
	return nil
}

func (s *memTxnSink[TXN]) Abort(_ context.Context, txn TXN) error {
	delete(s.open, s.id(txn))
	return nil
}

func (s *memTxnSink[TXN]) Close(context.Context) error { return nil }

func txnJob[TXN any](env *weir.Env, limit int64, pause bool, log *txnLog, mk func(string, int) TXN, id func(TXN) string) {
	src := weir.FromSource(env, func() weir.Source[int64] { return &evolveSource{limit: limit, pause: pause} }).UID("numbers").Parallelism(1)
	lines := weir.Map(src, func(v int64) string { return fmt.Sprint(v) }).Parallelism(2)
	weir.SinkToTransactional(lines, func() weir.TwoPhaseCommitSink[string, TXN] {
		return &memTxnSink[TXN]{mk: mk, id: id, log: log}
	}).UID("txn-sink").Parallelism(2)
}

// savepointWithTxnV1 runs the sink's first version until it has written
// the first records and stops it with a savepoint.
func savepointWithTxnV1(t *testing.T) (string, *txnLog) {
	t.Helper()
	log := newTxnLog()
	env, _ := newEnv(testConfig(t, 2, "0"))
	txnJob(env, 300, true, log, func(id string, n int) txnV1 { return txnV1{ID: id, Lines: int32(n)} }, func(x txnV1) string { return x.ID })
	job, err := env.Start(t.Context(), "txn-v1")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	sp, err := testutil.StopJob(t.Context(), job, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	return sp, log
}

// TestTransactionHandleEvolution: the savepoint's handles of txnV1 are
// restored into a sink whose handle is txnV2 (a widened field, an added
// one), each with the id it was written with; the output across both runs
// is every record exactly once.
func TestTransactionHandleEvolution(t *testing.T) {
	sp, log1 := savepointWithTxnV1(t)
	log2 := newTxnLog()
	env, log := newEnvFrom(testConfig(t, 2, "0"), sp)
	txnJob(env, 600, false, log2, func(id string, n int) txnV2 { return txnV2{ID: id, Lines: int64(n), Note: "v2"} }, func(x txnV2) string { return x.ID })
	execute(t, env, log)
	if len(log2.restored) == 0 {
		t.Fatal("the restored sink was handed no transactions: the test proves nothing")
	}
	for _, id := range log2.restored {
		if !slices.Contains(log1.begun, id) {
			t.Errorf("restored handle id %q was never begun by version 1 (begun: %v)", id, log1.begun)
		}
	}
	var got []string
	for _, l := range []*txnLog{log1, log2} {
		for _, lines := range l.committed {
			got = append(got, lines...)
		}
	}
	var want []string
	for i := range 600 {
		want = append(want, fmt.Sprint(i))
	}
	sameMultiset(t, want, got)
}

// TestTransactionHandleIncompatible: handles the new type cannot read
// fail the job at once, naming the sink and the field, without a restart.
func TestTransactionHandleIncompatible(t *testing.T) {
	sp, _ := savepointWithTxnV1(t)
	env, log := newEnvFrom(testConfig(t, 2, "0"), sp)
	txnJob(env, 600, false, newTxnLog(), func(id string, n int) txnV3 { return txnV3{ID: int64(len(id)), Lines: int64(n)} }, func(x txnV3) string { return fmt.Sprint(x.ID) })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := env.Execute(ctx, "txn-v3")
	// The sink declares its handles, so the check before the job runs
	// finds it: no task started, nothing to restart.
	if !errors.Is(err, weir.ErrIncompatibleState) {
		t.Fatalf("Execute = %v, want an error matching weir.ErrIncompatibleState\nlog:\n%s", err, log)
	}
	if jf := (*weir.JobFailedError)(nil); errors.As(err, &jf) && jf.Restarts != 0 {
		t.Errorf("failed after %d restarts, want none", jf.Restarts)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("failed after %v, want within seconds", time.Since(start))
	}
	if strings.Contains(log.String(), "task failed") {
		t.Errorf("a task ran and failed; the check before the job runs should have refused it:\n%s", log)
	}
	for _, part := range []string{`"txn-sink"`, "transaction handles", "ID", "string", "int64", "connector"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error does not name %s: %v", part, err)
		}
	}
	t.Log(err)
}
