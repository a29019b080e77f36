package runtime

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
)

// TestTaskFinishesOnlyOnItsFinalCheckpoint plays issue 31, the
// final-checkpoint stall, at the task: the task snapshots final
// checkpoint 1, which another region's failure aborts; while that region
// reads its input again, periodic checkpoint 2 completes. The task must
// not finish on it (it did, and the restarted region's final checkpoint
// then waited for its ack until execution.checkpointing.timeout); it
// commits 2, takes part in final checkpoint 3 and finishes on 3's
// completion. Each of the two rules suffices on its own, so the abort's
// notification is also played as lost, and the completion's kind as not
// said (a JobManager of an older version).
func TestTaskFinishesOnlyOnItsFinalCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name         string
		abortArrives bool
		kindKnown    bool
	}{
		{"kind said", true, true},
		{"kind said, abort lost", false, true},
		{"kind unknown", true, false},
		{"kind unknown, abort lost", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := &ackGateway{acks: make(chan checkpoint.ID, 4)}
			op := &commitOp{}
			task := &Task{
				ID:      checkpoint.TaskID{Vertex: 0, Subtask: 0},
				Name:    "src",
				chain:   chain{ops: []dataflow.Operator{op}, ocs: []*dataflow.OperatorContext{{UID: "sink", Name: "sink"}}},
				mail:    newMailbox(),
				gw:      gw,
				logger:  slog.New(slog.DiscardHandler),
				now:     time.Now,
				metrics: &TaskMetrics{},
				rec:     barrierRecovery{},
				ckpt:    checkpointing{store: discardStore{}},
			}
			ctx := context.Background()
			defer task.ckpt.asyncWG.Wait()
			deliver := func(m mail) {
				t.Helper()
				task.mail.put(m)
				if err := task.handleMail(ctx); err != nil {
					t.Fatal(err)
				}
			}
			snapshot := func(id checkpoint.ID, kind checkpoint.Kind) {
				t.Helper()
				deliver(mail{kind: mailTrigger, barrier: checkpoint.Barrier{ID: id, Timestamp: time.Now(), Kind: kind}})
				if got := <-gw.acks; got != id {
					t.Fatalf("acked %d, want %d", got, id)
				}
			}
			complete := func(id checkpoint.ID, kind checkpoint.Kind) {
				t.Helper()
				deliver(mail{kind: mailNotifyComplete, id: id, ckind: kind, ckindKnown: tc.kindKnown})
			}

			snapshot(1, checkpoint.Final)
			if tc.abortArrives {
				deliver(mail{kind: mailNotifyAborted, id: 1})
			}
			snapshot(2, checkpoint.Periodic)
			complete(2, checkpoint.Periodic)
			if task.ckpt.finished {
				t.Fatal("the task finished on periodic checkpoint 2 after its final checkpoint 1 was aborted")
			}
			if !slices.Equal(op.completed, []checkpoint.ID{2}) {
				t.Fatalf("operators told of completions %v, want [2]", op.completed)
			}
			snapshot(3, checkpoint.Final)
			complete(3, checkpoint.Final)
			if !task.ckpt.finished {
				t.Fatal("the task did not finish on the completion of its final checkpoint 3")
			}
			if !slices.Equal(op.completed, []checkpoint.ID{2, 3}) {
				t.Fatalf("operators told of completions %v, want [2 3]", op.completed)
			}
		})
	}
}

// ackGateway passes a task's acknowledgements on.
type ackGateway struct{ acks chan checkpoint.ID }

func (g *ackGateway) Acknowledge(_ checkpoint.TaskID, id checkpoint.ID, _ checkpoint.TaskState) {
	g.acks <- id
}
func (g *ackGateway) Decline(checkpoint.TaskID, checkpoint.ID, string, bool) {}
func (g *ackGateway) EndOfData(checkpoint.TaskID)                            {}

// commitOp is an operator without state that records the completions it
// is told of (a sink commits on them).
type commitOp struct{ completed []checkpoint.ID }

func (o *commitOp) Open(context.Context, *dataflow.OperatorContext) error { return nil }
func (o *commitOp) SnapshotState(context.Context, checkpoint.ID, time.Time) (dataflow.AsyncSnapshot, error) {
	return nil, nil
}
func (o *commitOp) NotifyCheckpointComplete(_ context.Context, id checkpoint.ID) error {
	o.completed = append(o.completed, id)
	return nil
}
func (o *commitOp) NotifyCheckpointAborted(checkpoint.ID) error { return nil }
func (o *commitOp) EndInput(context.Context) error              { return nil }
func (o *commitOp) Close(context.Context) error                 { return nil }

// discardStore is checkpoint storage nothing is written to.
type discardStore struct{}

func (discardStore) ForCheckpoint(checkpoint.ID) dataflow.StateWriter { return discardStore{} }
func (discardStore) WriteFile(context.Context, string, func(io.Writer) error) (checkpoint.StateFile, error) {
	return checkpoint.StateFile{}, nil
}
