package cluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/runtime"
)

// stateRecorder is a JobMasterGateway that keeps the last task failure.
type stateRecorder struct {
	deployment.JobMasterGateway
	err error
}

func (r *stateRecorder) TaskStateChanged(_ string, _ deployment.ExecutionID, _ deployment.ExecState, err error) {
	r.err = err
}

// TestTaskFailureCrossesTheWire: a task failure keeps, across a
// TaskManager's session, its text and what the JobManager acts on: that
// it is unrecoverable, and that it lost a pre-committed transaction
// (counted as data loss).
func TestTaskFailureCrossesTheWire(t *testing.T) {
	lost := runtime.Unrecoverable(fmt.Errorf("commit transaction of checkpoint 7: staged data gone: %w", dataflow.ErrTransactionLost))
	for _, tc := range []struct {
		name                string
		err                 error
		unrecoverable, loss bool
	}{
		{"lost transaction", lost, true, true},
		{"plain failure", errors.New("boom"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := sessionJobMaster{}.stateMessage("demo", deployment.ExecutionID{Task: checkpoint.TaskID{Vertex: 1}}, deployment.ExecFailed, tc.err)
			rec := &stateRecorder{}
			deliverToJob(rec, msg, func(string, error) {})
			if rec.err == nil || rec.err.Error() != tc.err.Error() {
				t.Fatalf("delivered %v, want the text %q", rec.err, tc.err)
			}
			if got := runtime.IsUnrecoverable(rec.err); got != tc.unrecoverable {
				t.Errorf("unrecoverable = %t, want %t", got, tc.unrecoverable)
			}
			if got := errors.Is(rec.err, dataflow.ErrTransactionLost); got != tc.loss {
				t.Errorf("matches ErrTransactionLost = %t, want %t", got, tc.loss)
			}
		})
	}
}
