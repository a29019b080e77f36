package runtime

import (
	"github.com/weirstream/weir/internal/checkpoint"
)

// Deployment is what a JobMaster sends one TaskManager to start its tasks
// of one region (or of the whole job, at the first start): plain data, so
// that cluster mode can carry it over the wire.
type Deployment struct {
	Job string
	// Restore is the completed checkpoint the tasks restore from; nil on a
	// fresh start.
	Restore *RestoreRef
	Tasks   []TaskDeployment
}

// TaskDeployment is one execution to start.
type TaskDeployment struct {
	Exec ExecutionID
	// Slot is the logical slot: with slot sharing, slot i runs subtask i
	// of every vertex.
	Slot int
	// Inputs are the channels of the task's gate, in gate order: input by
	// input, the producer subtasks in order (see gateOffsets).
	Inputs []ChannelDesc
	// Outputs are the consumers of the chain's last operator, per output
	// edge (in Vertex.Outputs order), per consumer subtask.
	Outputs [][]ChannelDesc
}

// ChannelDesc locates the peer of one channel: the producer of an input
// channel or the consumer of an output channel. A peer on the same
// TaskManager is connected in process; any other through the data plane at
// DataAddress.
type ChannelDesc struct {
	Peer        ExecutionID
	TM          ResourceID
	DataAddress string
}

// RestoreRef names the completed checkpoint tasks restore from. The
// JobMaster verified it; a TaskExecutor only reads its _metadata. An empty
// Path means chk-ID in the job's own checkpoint storage; any other Path is
// a location as the user gave it (--from), resolved through
// JobConfig.Locations when set.
type RestoreRef struct {
	ID   checkpoint.ID
	Path string
}

// gateOffsets returns, per input of v, the index of its first channel in
// v's gates: channels are laid out input by input, each input's producer
// subtasks in order.
func gateOffsets(v *Vertex) (offsets []int, total int) {
	for _, in := range v.Inputs {
		offsets = append(offsets, total)
		total += in.From.Parallelism
	}
	return offsets, total
}

// placement says where an execution runs: its TaskManager, that
// TaskManager's data address and the logical slot.
type placement func(t checkpoint.TaskID) (tm ResourceID, dataAddress string, slot int)

// describeTasks builds the TaskDeployments of tasks, whose executions are
// exec(t). Every producer and consumer of a task must be in tasks too, or
// at least be running as exec says: a region has no channel to another.
func describeTasks(jg *JobGraph, tasks []checkpoint.TaskID, exec func(checkpoint.TaskID) ExecutionID, place placement) []TaskDeployment {
	desc := func(t checkpoint.TaskID) ChannelDesc {
		tm, addr, _ := place(t)
		return ChannelDesc{Peer: exec(t), TM: tm, DataAddress: addr}
	}
	out := make([]TaskDeployment, 0, len(tasks))
	for _, t := range tasks {
		v := jg.Vertices[t.Vertex]
		_, _, slot := place(t)
		td := TaskDeployment{Exec: exec(t), Slot: slot}
		for _, in := range v.Inputs {
			for p := range in.From.Parallelism {
				td.Inputs = append(td.Inputs, desc(checkpoint.TaskID{Vertex: in.From.ID, Subtask: p}))
			}
		}
		for _, o := range v.Outputs {
			cs := make([]ChannelDesc, o.To.Parallelism)
			for j := range cs {
				cs[j] = desc(checkpoint.TaskID{Vertex: o.To.ID, Subtask: j})
			}
			td.Outputs = append(td.Outputs, cs)
		}
		out = append(out, td)
	}
	return out
}
