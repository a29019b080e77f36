package cluster

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/runtime"
)

// Conversions between the runtime's gateway types and the wire schema.
// They are total: a field a peer left out becomes the zero value, and the
// receiving side's checks (attempts, job names) drop what does not fit.

func specToPB(s runtime.JobSpec) *pb.JobSpec {
	out := &pb.JobSpec{Name: s.Name, Kind: s.Kind, Args: s.Args, Config: s.Config}
	if s.Fingerprint != ([32]byte{}) {
		out.Fingerprint = s.Fingerprint[:]
	}
	return out
}

func specFromPB(s *pb.JobSpec) runtime.JobSpec {
	out := runtime.JobSpec{Name: s.GetName(), Kind: s.GetKind(), Args: s.GetArgs(), Config: s.GetConfig()}
	copy(out.Fingerprint[:], s.GetFingerprint())
	return out
}

func execToPB(e runtime.ExecutionID) *pb.ExecutionID {
	return &pb.ExecutionID{Vertex: int32(e.Task.Vertex), Subtask: int32(e.Task.Subtask), Attempt: int32(e.Attempt)}
}

func execFromPB(e *pb.ExecutionID) runtime.ExecutionID {
	return runtime.ExecutionID{Task: checkpoint.TaskID{Vertex: int(e.GetVertex()), Subtask: int(e.GetSubtask())}, Attempt: int(e.GetAttempt())}
}

func execsToPB(es []runtime.ExecutionID) []*pb.ExecutionID {
	out := make([]*pb.ExecutionID, len(es))
	for i, e := range es {
		out[i] = execToPB(e)
	}
	return out
}

func execsFromPB(es []*pb.ExecutionID) []runtime.ExecutionID {
	out := make([]runtime.ExecutionID, len(es))
	for i, e := range es {
		out[i] = execFromPB(e)
	}
	return out
}

func channelToPB(c runtime.ChannelDesc) *pb.ChannelDesc {
	return &pb.ChannelDesc{Peer: execToPB(c.Peer), Tm: string(c.TM), DataAddress: c.DataAddress}
}

func channelFromPB(c *pb.ChannelDesc) runtime.ChannelDesc {
	return runtime.ChannelDesc{Peer: execFromPB(c.GetPeer()), TM: runtime.ResourceID(c.GetTm()), DataAddress: c.GetDataAddress()}
}

func deployToPB(d runtime.Deployment) *pb.Deploy {
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

func deployFromPB(d *pb.Deploy) runtime.Deployment {
	out := runtime.Deployment{Job: d.GetJob()}
	if r := d.GetRestore(); r != nil {
		out.Restore = &runtime.RestoreRef{ID: checkpoint.ID(r.GetCheckpointId()), Path: r.GetPath()}
	}
	for _, t := range d.GetTasks() {
		td := runtime.TaskDeployment{Exec: execFromPB(t.GetExec()), Slot: int(t.GetSlot())}
		for _, in := range t.GetInputs() {
			td.Inputs = append(td.Inputs, channelFromPB(in))
		}
		for _, oe := range t.GetOutputs() {
			var edge []runtime.ChannelDesc
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

func stateToPB(s runtime.ExecState) pb.ExecState {
	switch s {
	case runtime.ExecDeploying:
		return pb.ExecState_EXEC_STATE_DEPLOYING
	case runtime.ExecRunning:
		return pb.ExecState_EXEC_STATE_RUNNING
	case runtime.ExecFinished:
		return pb.ExecState_EXEC_STATE_FINISHED
	case runtime.ExecCanceled:
		return pb.ExecState_EXEC_STATE_CANCELED
	}
	return pb.ExecState_EXEC_STATE_FAILED
}

// stateFromPB maps a reported state; states the runtime does not report
// (INITIALIZING, CANCELING) and unknown ones give ok false.
func stateFromPB(s pb.ExecState) (runtime.ExecState, bool) {
	switch s {
	case pb.ExecState_EXEC_STATE_DEPLOYING:
		return runtime.ExecDeploying, true
	case pb.ExecState_EXEC_STATE_RUNNING:
		return runtime.ExecRunning, true
	case pb.ExecState_EXEC_STATE_FINISHED:
		return runtime.ExecFinished, true
	case pb.ExecState_EXEC_STATE_CANCELED:
		return runtime.ExecCanceled, true
	case pb.ExecState_EXEC_STATE_FAILED:
		return runtime.ExecFailed, true
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
