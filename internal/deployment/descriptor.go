package deployment

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
	// input, the producer subtasks in order.
	Inputs []ChannelDesc
	// Outputs are the consumers of the chain's last operator, per output
	// edge (in the order of the vertex's outputs, dataflow.Vertex.Outputs),
	// per consumer subtask.
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
// a location as the user gave it (--from), resolved through the runtime's
// JobConfig.Locations when set.
type RestoreRef struct {
	ID   checkpoint.ID
	Path string
}
