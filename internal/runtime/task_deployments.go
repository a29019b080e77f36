package runtime

import (
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
)

// gateOffsets returns, per input of v, the index of its first channel in
// v's gates: channels are laid out input by input, each input's producer
// subtasks in order.
func gateOffsets(v *dataflow.Vertex) (offsets []int, total int) {
	for _, in := range v.Inputs {
		offsets = append(offsets, total)
		total += in.From.Parallelism
	}
	return offsets, total
}

// placement says where an execution runs: its TaskManager, that
// TaskManager's data address and the logical slot.
type placement func(t checkpoint.TaskID) (tm deployment.ResourceID, dataAddress string, slot int)

// describeTasks builds the TaskDeployments of tasks, whose executions are
// exec(t). Every producer and consumer of a task must be in tasks too, or
// at least be running as exec says: a region has no channel to another.
func describeTasks(jg *dataflow.JobGraph, tasks []checkpoint.TaskID, exec func(checkpoint.TaskID) deployment.ExecutionID, place placement) []deployment.TaskDeployment {
	desc := func(t checkpoint.TaskID) deployment.ChannelDesc {
		tm, addr, _ := place(t)
		return deployment.ChannelDesc{Peer: exec(t), TM: tm, DataAddress: addr}
	}
	out := make([]deployment.TaskDeployment, 0, len(tasks))
	for _, t := range tasks {
		v := jg.Vertices[t.Vertex]
		_, _, slot := place(t)
		td := deployment.TaskDeployment{Exec: exec(t), Slot: slot}
		for _, in := range v.Inputs {
			for p := range in.From.Parallelism {
				td.Inputs = append(td.Inputs, desc(checkpoint.TaskID{Vertex: in.From.ID, Subtask: p}))
			}
		}
		for _, o := range v.Outputs {
			cs := make([]deployment.ChannelDesc, o.To.Parallelism)
			for j := range cs {
				cs[j] = desc(checkpoint.TaskID{Vertex: o.To.ID, Subtask: j})
			}
			td.Outputs = append(td.Outputs, cs)
		}
		out = append(out, td)
	}
	return out
}
