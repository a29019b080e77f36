package cluster

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/runtime"
)

// Conversions between the runtime's gateway types and the wire schema.
// They are total: a field a peer left out becomes the zero value, and the
// receiving side's checks (attempts, job names) drop what does not fit.

func specToPB(s deployment.JobSpec) *pb.JobSpec {
	out := &pb.JobSpec{Name: s.Name, Kind: s.Kind, Args: s.Args, Config: s.Config}
	if s.Fingerprint != ([32]byte{}) {
		out.Fingerprint = s.Fingerprint[:]
	}
	if len(s.Parallelism) > 0 {
		out.Parallelism = make(map[string]int32, len(s.Parallelism))
		for uid, p := range s.Parallelism {
			out.Parallelism[uid] = int32(p)
		}
	}
	return out
}

func specFromPB(s *pb.JobSpec) deployment.JobSpec {
	out := deployment.JobSpec{Name: s.GetName(), Kind: s.GetKind(), Args: s.GetArgs(), Config: s.GetConfig()}
	copy(out.Fingerprint[:], s.GetFingerprint())
	if p := s.GetParallelism(); len(p) > 0 {
		out.Parallelism = make(map[string]int, len(p))
		for uid, n := range p {
			out.Parallelism[uid] = int(n)
		}
	}
	return out
}

func execToPB(e deployment.ExecutionID) *pb.ExecutionID {
	return &pb.ExecutionID{Vertex: int32(e.Task.Vertex), Subtask: int32(e.Task.Subtask), Attempt: int32(e.Attempt)}
}

func execFromPB(e *pb.ExecutionID) deployment.ExecutionID {
	return deployment.ExecutionID{Task: checkpoint.TaskID{Vertex: int(e.GetVertex()), Subtask: int(e.GetSubtask())}, Attempt: int(e.GetAttempt())}
}

func execsToPB(es []deployment.ExecutionID) []*pb.ExecutionID {
	out := make([]*pb.ExecutionID, len(es))
	for i, e := range es {
		out[i] = execToPB(e)
	}
	return out
}

func execsFromPB(es []*pb.ExecutionID) []deployment.ExecutionID {
	out := make([]deployment.ExecutionID, len(es))
	for i, e := range es {
		out[i] = execFromPB(e)
	}
	return out
}

func channelToPB(c deployment.ChannelDesc) *pb.ChannelDesc {
	return &pb.ChannelDesc{Peer: execToPB(c.Peer), Tm: string(c.TM), DataAddress: c.DataAddress}
}

func channelFromPB(c *pb.ChannelDesc) deployment.ChannelDesc {
	return deployment.ChannelDesc{Peer: execFromPB(c.GetPeer()), TM: deployment.ResourceID(c.GetTm()), DataAddress: c.GetDataAddress()}
}

func deployToPB(d deployment.Deployment) *pb.Deploy {
	out := &pb.Deploy{Job: d.Job}
	if d.Restore != nil {
		out.Restore = &pb.RestoreRef{CheckpointId: int64(d.Restore.ID), Path: d.Restore.Path}
	}
	for _, td := range d.Tasks {
		t := &pb.TaskDeployment{Exec: execToPB(td.Exec), Slot: int32(td.Slot)}
		for _, in := range td.Inputs {
			t.Inputs = append(t.Inputs, channelToPB(in))
		}
		for _, edge := range td.Outputs {
			oe := &pb.OutputEdge{}
			for _, c := range edge {
				oe.Consumers = append(oe.Consumers, channelToPB(c))
			}
			t.Outputs = append(t.Outputs, oe)
		}
		out.Tasks = append(out.Tasks, t)
	}
	return out
}

func deployFromPB(d *pb.Deploy) deployment.Deployment {
	out := deployment.Deployment{Job: d.GetJob()}
	if r := d.GetRestore(); r != nil {
		out.Restore = &deployment.RestoreRef{ID: checkpoint.ID(r.GetCheckpointId()), Path: r.GetPath()}
	}
	for _, t := range d.GetTasks() {
		td := deployment.TaskDeployment{Exec: execFromPB(t.GetExec()), Slot: int(t.GetSlot())}
		for _, in := range t.GetInputs() {
			td.Inputs = append(td.Inputs, channelFromPB(in))
		}
		for _, oe := range t.GetOutputs() {
			var edge []deployment.ChannelDesc
			for _, c := range oe.GetConsumers() {
				edge = append(edge, channelFromPB(c))
			}
			td.Outputs = append(td.Outputs, edge)
		}
		out.Tasks = append(out.Tasks, td)
	}
	return out
}

func kindToPB(k checkpoint.Kind) pb.CheckpointKind {
	switch k {
	case checkpoint.Final:
		return pb.CheckpointKind_CHECKPOINT_KIND_FINAL
	case checkpoint.Savepoint:
		return pb.CheckpointKind_CHECKPOINT_KIND_SAVEPOINT
	}
	return pb.CheckpointKind_CHECKPOINT_KIND_PERIODIC
}

func kindFromPB(k pb.CheckpointKind) checkpoint.Kind {
	switch k {
	case pb.CheckpointKind_CHECKPOINT_KIND_FINAL:
		return checkpoint.Final
	case pb.CheckpointKind_CHECKPOINT_KIND_SAVEPOINT:
		return checkpoint.Savepoint
	}
	return checkpoint.Periodic
}

func stateToPB(s deployment.ExecState) pb.ExecState {
	switch s {
	case deployment.ExecDeploying:
		return pb.ExecState_EXEC_STATE_DEPLOYING
	case deployment.ExecRunning:
		return pb.ExecState_EXEC_STATE_RUNNING
	case deployment.ExecFinished:
		return pb.ExecState_EXEC_STATE_FINISHED
	case deployment.ExecCanceled:
		return pb.ExecState_EXEC_STATE_CANCELED
	}
	return pb.ExecState_EXEC_STATE_FAILED
}

// stateFromPB maps a reported state; states the runtime does not report
// (INITIALIZING, CANCELING) and unknown ones give ok false.
func stateFromPB(s pb.ExecState) (deployment.ExecState, bool) {
	switch s {
	case pb.ExecState_EXEC_STATE_DEPLOYING:
		return deployment.ExecDeploying, true
	case pb.ExecState_EXEC_STATE_RUNNING:
		return deployment.ExecRunning, true
	case pb.ExecState_EXEC_STATE_FINISHED:
		return deployment.ExecFinished, true
	case pb.ExecState_EXEC_STATE_CANCELED:
		return deployment.ExecCanceled, true
	case pb.ExecState_EXEC_STATE_FAILED:
		return deployment.ExecFailed, true
	}
	return 0, false
}

// remoteError is an error that crossed the wire: its text, and whether
// the sender marked it unrecoverable.
func remoteError(msg string, unrecoverable bool) error {
	if msg == "" && !unrecoverable {
		return nil
	}
	if msg == "" {
		msg = "failed without an error"
	}
	err := errors.New(msg)
	if unrecoverable {
		return runtime.Unrecoverable(err)
	}
	return err
}

// transactionLostError is a remote failure the sender marked as a lost
// transaction: it matches dataflow.ErrTransactionLost, whose text it
// already holds.
type transactionLostError struct{ err error }

func (e *transactionLostError) Error() string { return e.err.Error() }
func (e *transactionLostError) Unwrap() []error {
	return []error{e.err, dataflow.ErrTransactionLost}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func barrierFromPB(m *pb.Trigger) checkpoint.Barrier {
	return checkpoint.Barrier{ID: checkpoint.ID(m.GetCheckpointId()), Timestamp: time.Unix(0, m.GetTimestampUnixNanos()), Kind: kindFromPB(m.GetKind())}
}

func taskStateToPB(st checkpoint.TaskState) ([]byte, error) { return json.Marshal(st) }

func taskStateFromPB(b []byte) (checkpoint.TaskState, error) {
	var st checkpoint.TaskState
	err := json.Unmarshal(b, &st)
	return st, err
}
