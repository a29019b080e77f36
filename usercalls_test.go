package weir_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
)

// notified records the checkpoint ids a CheckpointListener was told of.
type notified struct {
	mu  sync.Mutex
	ids []int64
}

func (n *notified) NotifyCheckpointComplete(_ context.Context, id int64) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ids = append(n.ids, id)
	return nil
}

func (n *notified) last() (int64, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.ids) == 0 {
		return 0, 0
	}
	return n.ids[len(n.ids)-1], len(n.ids)
}

// listeningSource is a datagen source that listens for checkpoints.
type listeningSource struct {
	weir.Source[int64]
	*notified
}

// listeningSink is an at-least-once sink that listens for checkpoints.
type listeningSink struct {
	nullSink[int64]
	*notified
}

// listeningTxnSink is a two-phase-commit sink that listens for
// checkpoints; its commits always succeed.
type listeningTxnSink struct {
	*notified
	seq int64
}

func (s *listeningTxnSink) Open(context.Context, *weir.RuntimeContext, []int64) error { return nil }
func (s *listeningTxnSink) Begin(context.Context) (int64, error)                      { s.seq++; return s.seq, nil }
func (s *listeningTxnSink) Write(context.Context, int64, []int64) error               { return nil }
func (s *listeningTxnSink) PreCommit(context.Context, int64) error                    { return nil }
func (s *listeningTxnSink) Commit(context.Context, int64) error                       { return nil }
func (s *listeningTxnSink) Abort(context.Context, int64) error                        { return nil }
func (s *listeningTxnSink) Close(context.Context) error                               { return nil }

// TestCheckpointListeners: sources, sinks and two-phase-commit sinks that
// implement CheckpointListener are told of completed checkpoints, up to
// the job's last (the final checkpoint of a bounded job).
func TestCheckpointListeners(t *testing.T) {
	env, log := newEnv(testConfig(t, 1, "10ms"))
	var src, sink, txnSink notified
	gen := datagen.New(ints(0), datagen.WithCount(2000), datagen.WithRate(20_000))
	s := weir.FromSource(env, func() weir.Source[int64] { return listeningSource{gen(), &src} }).UID("numbers")
	weir.SinkTo(s, func() weir.Sink[int64] { return listeningSink{notified: &sink} }).UID("plain")
	weir.SinkToTransactional(s, func() weir.TwoPhaseCommitSink[int64, int64] { return &listeningTxnSink{notified: &txnSink} }).UID("txn")
	job, err := env.Start(t.Context(), "listeners")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatalf("Wait: %v\nlog:\n%s", err, log)
	}
	want := job.Stats().LastCheckpointID
	if want == 0 {
		t.Fatal("no checkpoint completed")
	}
	for name, n := range map[string]*notified{"source": &src, "sink": &sink, "two-phase-commit sink": &txnSink} {
		if id, count := n.last(); id != want {
			t.Errorf("%s: last notification of %d was for checkpoint %d, want %d (the job's last)", name, count, id, want)
		}
	}
}

// ctxAtClose is a bounded source that records, at Close, whether the ctx
// its Open got and the ctx Close gets are cancelled.
type ctxAtClose struct {
	weir.Source[int64]
	openCtx            context.Context
	openDone, closeErr chan error
}

func (s *ctxAtClose) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	s.openCtx = ctx
	return s.Source.Open(ctx, rc)
}

func (s *ctxAtClose) Close(ctx context.Context) error {
	s.openDone <- s.openCtx.Err()
	s.closeErr <- ctx.Err()
	return s.Source.Close(ctx)
}

// TestOpenContextEndsBeforeClose: as the package doc says, the ctx of
// Open is cancelled when the task ends, before Close, even for a task
// that finished; Close's ctx is not (the job was not cancelled).
func TestOpenContextEndsBeforeClose(t *testing.T) {
	env, _ := newEnv(testConfig(t, 1, "0"))
	openDone, closeErr := make(chan error, 1), make(chan error, 1)
	gen := datagen.New(ints(0), datagen.WithCount(100))
	weir.SinkTo(weir.FromSource(env, func() weir.Source[int64] {
		return &ctxAtClose{Source: gen(), openDone: openDone, closeErr: closeErr}
	}), discardSink[int64])
	if err := env.Execute(t.Context(), "ctx-at-close"); err != nil {
		t.Fatal(err)
	}
	if err := <-openDone; err == nil {
		t.Error("Open's ctx was not cancelled when the finished task closed")
	}
	if err := <-closeErr; err != nil {
		t.Errorf("Close's ctx of a finished task = %v, want not cancelled", err)
	}
}

// errSinkFull is a user sentinel a sink's Write wraps.
var errSinkFull = errors.New("sink full")

// failingSink fails its first Write with errSinkFull.
type failingSink struct{ nullSink[int64] }

func (failingSink) Write(context.Context, []int64) error {
	return fmt.Errorf("write batch: %w", errSinkFull)
}

// TestUserErrorMatchesThroughJobFailedError: an error a user call wraps
// reaches the caller of Wait in the JobFailedError's chain, so
// errors.Is finds the user's own sentinel.
func TestUserErrorMatchesThroughJobFailedError(t *testing.T) {
	env, _ := newEnv(testConfig(t, 1, "0", "restart-strategy.type", "none"))
	weir.SinkTo(weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(10))), func() weir.Sink[int64] { return failingSink{} })
	err := env.Execute(t.Context(), "user-error")
	var jf *weir.JobFailedError
	if !errors.As(err, &jf) || !errors.Is(err, errSinkFull) || !errors.Is(jf.Cause, errSinkFull) {
		t.Fatalf("Execute = %v, want a JobFailedError whose chain holds the sink's sentinel", err)
	}
}
