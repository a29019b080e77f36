package runtime

import (
	"fmt"
	"sync"

	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/network"
)

// partitions connects producers to their consumers' gates on one
// TaskExecutor: every deployed consumer registers its gate under its
// execution, and a producer's writer takes the channel of each consumer
// from here. A consumer on another TaskManager is reached through the data
// plane instead (remote.go).
//
// Channels never cross regions, and a region is deployed as a whole, so
// the consumers a producer needs are registered in the same Deploy: gates
// first, then tasks.
type partitions struct {
	self deployment.ResourceID
	mu   sync.Mutex
	// gates are keyed by execution, attempt included: a restarted
	// consumer's new gate never meets the old attempt's producers.
	gates map[deployment.ExecutionID]*consumerGate
}

type consumerGate struct {
	gate   *network.Gate
	inputs []deployment.ChannelDesc // the gate's channels' producers, in gate order
}

func newPartitions(self deployment.ResourceID) *partitions {
	return &partitions{self: self, gates: map[deployment.ExecutionID]*consumerGate{}}
}

// register makes a consumer's gate reachable for its producers.
func (p *partitions) register(exec deployment.ExecutionID, g *network.Gate, inputs []deployment.ChannelDesc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gates[exec] = &consumerGate{gate: g, inputs: inputs}
}

// release forgets a consumer's gate once its execution ended.
func (p *partitions) release(exec deployment.ExecutionID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.gates, exec)
}

// local returns the in-process channel from producer to a consumer on this
// TaskManager, which is channel index of the consumer's gate.
func (p *partitions) local(producer deployment.ExecutionID, consumer deployment.ChannelDesc, index int) (*network.Channel, error) {
	p.mu.Lock()
	cg := p.gates[consumer.Peer]
	p.mu.Unlock()
	if cg == nil {
		return nil, fmt.Errorf("output of %s: consumer %s is not deployed on TaskManager %s", producer, consumer.Peer, p.self)
	}
	if index < 0 || index >= len(cg.inputs) || cg.inputs[index].Peer != producer {
		return nil, fmt.Errorf("output of %s: channel %d of consumer %s does not come from it: the deployment's channel layout is inconsistent", producer, index, consumer.Peer)
	}
	return cg.gate.Channel(index), nil
}
