package weir_test

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/hooks"
)

// txnSink is a two-phase-commit sink that declares a transaction timeout.
type txnSink struct {
	timeout time.Duration
}

func (s txnSink) Open(context.Context, *weir.RuntimeContext, []int) error { return nil }
func (s txnSink) Begin(context.Context) (int, error)                      { return 0, nil }
func (s txnSink) Write(context.Context, int, []int) error                 { return nil }
func (s txnSink) PreCommit(context.Context, int) error                    { return nil }
func (s txnSink) Commit(context.Context, int) error                       { return nil }
func (s txnSink) Abort(context.Context, int) error                        { return nil }
func (s txnSink) Close(context.Context) error                             { return nil }
func (s txnSink) TransactionTimeout() time.Duration                       { return s.timeout }

// The shortest transaction timeout the job's two-phase-commit sinks
// declare reaches the plan, whose checkpoint coordinator fails the job
// before an open transaction would outlive it while storage fails.
func TestSinkTransactionTimeoutReachesThePlan(t *testing.T) {
	var _ weir.TransactionTimeouter = txnSink{}
	env := weir.NewEnv()
	src := weir.FromSource(env, datagen.New(func(i int64) int { return int(i) }, datagen.WithCount(3)))
	weir.SinkToTransactional(src, func() weir.TwoPhaseCommitSink[int, int] { return txnSink{timeout: 15 * time.Minute} })
	weir.SinkToTransactional(src, func() weir.TwoPhaseCommitSink[int, int] { return txnSink{timeout: 40 * time.Second} })
	weir.SinkToTransactional(src, func() weir.TwoPhaseCommitSink[int, int] { return txnSink{} })
	if got := hooks.Plan(env).TransactionTimeout; got != 40*time.Second {
		t.Fatalf("plan's transaction timeout %v, want the shortest declared, 40s", got)
	}
	_, jc, err := hooks.Plan(env).Resolve(context.Background(), "txn")
	if err != nil {
		t.Fatal(err)
	}
	if jc.Checkpoint.TransactionTimeout != 40*time.Second {
		t.Fatalf("coordinator's transaction timeout %v, want 40s", jc.Checkpoint.TransactionTimeout)
	}
}
