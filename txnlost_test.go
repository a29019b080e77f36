package weir_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/hooks"
)

// losingSink is a two-phase-commit sink whose store lost every
// pre-committed transaction: Commit wraps weir.ErrTransactionLost.
type losingSink struct{ seq int64 }

func (s *losingSink) Open(context.Context, *weir.RuntimeContext, []int64) error { return nil }
func (s *losingSink) Begin(context.Context) (int64, error)                      { s.seq++; return s.seq, nil }
func (s *losingSink) Write(context.Context, int64, []int64) error               { return nil }
func (s *losingSink) PreCommit(context.Context, int64) error                    { return nil }
func (s *losingSink) Commit(_ context.Context, txn int64) error {
	return fmt.Errorf("commit %d: staged data gone: %w", txn, weir.ErrTransactionLost)
}
func (s *losingSink) Abort(context.Context, int64) error { return nil }
func (s *losingSink) Close(context.Context) error        { return nil }

// TestTransactionLostFailsAtOnce: a Commit wrapping ErrTransactionLost
// after a checkpoint completed fails the job without a restart (a restart
// would restore that checkpoint and fail the same commit), and the error
// Wait returns matches both JobFailedError and ErrTransactionLost.
func TestTransactionLostFailsAtOnce(t *testing.T) {
	env, log := newEnv(testConfig(t, 1, "20ms"))
	src := weir.FromSource(env, datagen.New(ints(0), datagen.WithRate(1000))).UID("numbers")
	weir.SinkToTransactional(src, func() weir.TwoPhaseCommitSink[int64, int64] { return &losingSink{} }).UID("losing")
	err := env.Execute(t.Context(), "txn-lost")
	var jf *weir.JobFailedError
	if !errors.As(err, &jf) || !errors.Is(err, weir.ErrTransactionLost) {
		t.Fatalf("Execute = %v, want a JobFailedError matching ErrTransactionLost\nlog:\n%s", err, log)
	}
	if jf.Restarts != 0 {
		t.Errorf("the job restarted %d times before failing; a lost transaction must fail it at once", jf.Restarts)
	}
	// The loss is counted (numberOfLostTransactions, which alerts), once
	// per lost transaction: one subtask, one commit.
	if n := hooks.Plan(env).Status.LostTransactions.Load(); n != 1 {
		t.Errorf("LostTransactions = %d, want 1", n)
	}
}
