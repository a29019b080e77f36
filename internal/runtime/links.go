package runtime

import (
	"context"
	"fmt"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/remote"
)

// taskLinks connects one execution to its peers: a peer on this
// TaskManager through an in-process channel of its gate (partitions), a
// peer on another TaskManager through the data plane, a remote.OutChannel
// per remote consumer and a remote.InputChannel per remote producer. It
// keeps what it opened, so the execution's end closes exactly its own
// channels (release).
//
// Remote records travel encoded with the producing node's ChannelCodec:
// the producer task encodes while it sends (OutChannel.Send), the consumer
// task decodes what it polls (Task.decodeRemote), so codec work stays on
// the tasks and the connection goroutines only copy bytes.
type taskLinks struct {
	self  deployment.ResourceID
	job   string
	parts *partitions
	net   *remote.ConnManager // nil: no data plane
	// credits is taskmanager.network.credits-per-channel; announce makes
	// OutChannels announce barriers (alternating mode, as the local gate
	// WithAnnouncements does).
	credits  int
	announce bool

	outs []*remote.OutChannel
	ins  []*remote.InputChannel

	// rec is the consistency mode's part of the execution (nil in the
	// barrier modes), which then makes every output channel and every
	// remote input: WEAKLY_CONSISTENT sends through in-flight logs kept
	// across attempts, and its remote inputs follow producers that move
	// (internal/runtime/weakrt).
	rec ExecRecovery
}

// sender returns the channel from producer to consumer subtask j of its
// output edge k, which is gate channel index of that consumer. A remote
// one is registered for the consumer's partition request; codec makes
// the edge's encoder on first use.
func (l *taskLinks) sender(producer deployment.ExecutionID, k, j, index int, consumer deployment.ChannelDesc, codec func() (dataflow.ChannelCodec, error)) (network.Sender, error) {
	if l.rec != nil {
		c, err := codec()
		if err != nil {
			return nil, err
		}
		return l.rec.Output(k, j, consumer, c)
	}
	if consumer.TM == l.self {
		return l.parts.local(producer, consumer, index)
	}
	if l.net == nil {
		return nil, l.noNetwork(producer, "consumer", consumer)
	}
	c, err := codec()
	if err != nil {
		return nil, err
	}
	o, err := remote.NewOutChannel(remote.OutChannelConfig{
		Key:      remote.PartitionKey{Job: l.job, Producer: producer.Task, Edge: k, Consumer: j},
		Attempt:  producer.Attempt,
		Codec:    c,
		Credits:  l.credits,
		Announce: l.announce,
	})
	if err != nil {
		return nil, fmt.Errorf("output of %s to %s: %w", producer, consumer.Peer, err)
	}
	if err := l.net.Registry().Register(o); err != nil {
		o.Close()
		return nil, fmt.Errorf("output of %s to %s: %w", producer, consumer.Peer, err)
	}
	l.outs = append(l.outs, o)
	return o, nil
}

// openInputs subscribes every gate channel of consumer whose producer runs
// on another TaskManager; what arrives goes into that gate channel. A
// channel that fails calls onFailure, which fails the task. ctx bounds
// the connects. A mode's part of the execution (rec) opens the channel
// its own way.
func (l *taskLinks) openInputs(ctx context.Context, consumer deployment.ExecutionID, v *dataflow.Vertex, inputs []deployment.ChannelDesc, gate *network.Gate, onFailure func(error)) error {
	offsets, _ := gateOffsets(v)
	for ch, in := range inputs {
		if in.TM == l.self {
			continue
		}
		if l.net == nil {
			return l.noNetwork(consumer, "producer", in)
		}
		input := 0
		for input+1 < len(offsets) && offsets[input+1] <= ch {
			input++
		}
		edge := outputEdge(v.Inputs[input].From, v, input)
		cfg := remote.InputConfig{
			Key:       remote.PartitionKey{Job: l.job, Producer: in.Peer.Task, Edge: edge, Consumer: consumer.Task.Subtask},
			Attempt:   in.Peer.Attempt,
			Gate:      gate,
			Channel:   ch,
			OnFailure: onFailure,
		}
		if l.rec != nil {
			if err := l.rec.OpenRemoteInput(ctx, in, cfg); err != nil {
				return fmt.Errorf("input of %s from %s: %w", consumer, in.Peer, err)
			}
			continue
		}
		conn, err := l.net.Conn(ctx, string(in.TM), in.DataAddress)
		if err != nil {
			return fmt.Errorf("input of %s from %s: %w", consumer, in.Peer, err)
		}
		ic, err := conn.OpenInput(cfg)
		if err != nil {
			return fmt.Errorf("input of %s from %s: %w", consumer, in.Peer, err)
		}
		l.ins = append(l.ins, ic)
	}
	return nil
}

func (l *taskLinks) noNetwork(exec deployment.ExecutionID, role string, peer deployment.ChannelDesc) error {
	return fmt.Errorf("deploy %s: its %s %s runs on TaskManager %s (%q), and TaskManager %s has no data plane (TaskExecutorConfig.Network is nil): start it with a data address, or place the whole region on one TaskManager", exec, role, peer.Peer, peer.TM, peer.DataAddress, l.self)
}

// hasRemoteInputs reports whether a gate channel is fed from another
// TaskManager: its batches arrive encoded.
func (l *taskLinks) hasRemoteInputs() bool {
	return len(l.ins) > 0 || l.rec != nil && l.rec.HasRemoteInputs()
}

// release closes the execution's remote channels. A finished execution
// ends its outputs with end of partition, after everything it sent, so
// consumers that still run (waiting for the final checkpoint's
// notification, as it did) see a clean end; any other end closes them,
// which fails their consumers (the same region, failing over anyway).
func (l *taskLinks) release(finished bool, st *jobstatus.Recorder) {
	for _, ic := range l.ins {
		ic.Close()
	}
	for _, o := range l.outs {
		s := o.Stats()
		if st != nil {
			st.RemoteBytesSent.Add(int64(s.SentBytes))
			st.RemotePrioritizedBarriers.Add(int64(s.Prioritized))
		}
		if finished && s.Bound && o.Send(context.Background(), network.Buffer{Kind: network.EndOfPartition}) == nil {
			continue // forgets itself once the end is written
		}
		o.Close()
	}
	if l.rec != nil {
		l.rec.Release(st)
	}
	l.ins, l.outs = nil, nil
}

// prioritize asks every remote producer to send the barrier of checkpoint
// id ahead of its queued data (the gate's Prioritize covers what already
// arrived).
func (l *taskLinks) prioritize(id checkpoint.ID) {
	for _, ic := range l.ins {
		ic.Prioritize(id)
	}
}

// deploymentPeers returns the other TaskManagers the channels of d name,
// with their data addresses, sorted.
func deploymentPeers(d *deployment.Deployment, self deployment.ResourceID) []deployment.ChannelDesc {
	seen := map[deployment.ResourceID]bool{}
	var out []deployment.ChannelDesc
	add := func(c deployment.ChannelDesc) {
		if c.TM != self && !seen[c.TM] {
			seen[c.TM] = true
			out = append(out, c)
		}
	}
	for _, td := range d.Tasks {
		for _, c := range td.Inputs {
			add(c)
		}
		for _, cs := range td.Outputs {
			for _, c := range cs {
				add(c)
			}
		}
	}
	slices.SortFunc(out, func(a, b deployment.ChannelDesc) int {
		switch {
		case a.TM < b.TM:
			return -1
		case a.TM > b.TM:
			return 1
		}
		return 0
	})
	return out
}

// outputEdge returns the index among from's outputs of the edge into
// input number input of to: the Edge of a remote channel's partition key.
func outputEdge(from, to *dataflow.Vertex, input int) int {
	for k, o := range from.Outputs {
		if o.To == to && o.InputIndex == input {
			return k
		}
	}
	return -1
}

// wireCodec is an edge's ChannelCodec on the consumer side: besides typed
// batches it takes the *network.Serialized batches of remote channels,
// which hold exactly what AppendBatch would write (the wire carries
// AppendBatch's encoding), so recording one as channel state, or measuring
// it, is a byte copy.
type wireCodec struct{ dataflow.ChannelCodec }

func (c wireCodec) AppendBatch(dst []byte, data any) []byte {
	if s, ok := data.(*network.Serialized); ok {
		return append(dst, s.Bytes...)
	}
	return c.ChannelCodec.AppendBatch(dst, data)
}

func (c wireCodec) Records(data any) int {
	if s, ok := data.(*network.Serialized); ok {
		return s.Records
	}
	return c.ChannelCodec.Records(data)
}
