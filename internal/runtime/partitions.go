package runtime

import (
	"fmt"
	"sync"

	"github.com/weirstream/weir/internal/network"
)

// partitions connects producers to their consumers' gates on one
// TaskExecutor: every deployed consumer registers its gate under its
// execution, and a producer's writer takes the channel of each consumer
// from here. A consumer on another TaskManager is reached through the data
// plane instead (remoteChannel).
//
// Channels never cross regions, and a region is deployed as a whole, so
// the consumers a producer needs are registered in the same Deploy: gates
// first, then tasks.
type partitions struct {
	self ResourceID
	mu   sync.Mutex
	// gates are keyed by execution, attempt included: a restarted
	// consumer's new gate never meets the old attempt's producers.
	gates map[ExecutionID]*consumerGate
}

type consumerGate struct {
	gate   *network.Gate
	inputs []ChannelDesc // the gate's channels' producers, in gate order
}

func newPartitions(self ResourceID) *partitions {
	return &partitions{self: self, gates: map[ExecutionID]*consumerGate{}}
}

// register makes a consumer's gate reachable for its producers.
func (p *partitions) register(exec ExecutionID, g *network.Gate, inputs []ChannelDesc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gates[exec] = &consumerGate{gate: g, inputs: inputs}
}

// release forgets a consumer's gate once its execution ended.
func (p *partitions) release(exec ExecutionID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.gates, exec)
}

// outChannel is a producer's channel: channel index of a consumer's gate.
type outChannel struct {
	gate  *network.Gate
	index int
}

// channel returns the channel from producer to consumer, which is channel
// index of the consumer's gate.
func (p *partitions) channel(producer ExecutionID, consumer ChannelDesc, index int) (outChannel, error) {
	if consumer.TM != p.self {
		return remoteChannel(producer, consumer, index)
	}
	p.mu.Lock()
	cg := p.gates[consumer.Peer]
	p.mu.Unlock()
	if cg == nil {
		return outChannel{}, fmt.Errorf("output of %s: consumer %s is not deployed on TaskManager %s", producer, consumer.Peer, p.self)
	}
	if index < 0 || index >= len(cg.inputs) || cg.inputs[index].Peer != producer {
		return outChannel{}, fmt.Errorf("output of %s: channel %d of consumer %s does not come from it: the deployment's channel layout is inconsistent", producer, index, consumer.Peer)
	}
	return outChannel{cg.gate, index}, nil
}

// remoteChannel is the seam of the remote data plane: a channel to a
// consumer on another TaskManager.
//
// TODO(remote data plane, design step 7): return an
// internal/network/remote OutChannel bound through the PartitionRegistry,
// and register remote InputChannels for inputs whose producer is remote.
// Until then a deployment across TaskManagers fails its producer.
func remoteChannel(producer ExecutionID, consumer ChannelDesc, index int) (outChannel, error) {
	return outChannel{}, fmt.Errorf("output of %s: consumer %s runs on TaskManager %s (%s): remote channels are not wired yet", producer, consumer.Peer, consumer.TM, consumer.DataAddress)
}

// remoteInput is the consumer side of the same seam: an input channel
// whose producer runs on another TaskManager.
//
// TODO(remote data plane, design step 7): register a remote InputChannel
// for it and send the PartitionRequest.
func remoteInput(consumer ExecutionID, producer ChannelDesc) error {
	return fmt.Errorf("input of %s: producer %s runs on TaskManager %s (%s): remote channels are not wired yet", consumer, producer.Peer, producer.TM, producer.DataAddress)
}
