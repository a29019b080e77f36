package dataflow

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/state"
)

// Partition says how an edge spreads records over the consumer's subtasks.
type Partition uint8

const (
	// Forward sends subtask i's records to subtask i (equal parallelism).
	Forward Partition = iota
	// Hash sends each record to the subtask owning its key group.
	Hash
	// Rebalance spreads records round-robin.
	Rebalance
	// Broadcast sends every record to every subtask.
	Broadcast
)

func (p Partition) String() string {
	return [...]string{"forward", "hash", "rebalance", "broadcast"}[p]
}

// Edge is a logical input of a Node.
type Edge struct {
	From      int // Node ID of the producer
	Partition Partition
	// KeyHash is the producer-typed stable key hash, a func(T) uint32, for
	// Hash edges.
	KeyHash any
	// Tag names the producer's side output the edge carries (an
	// OutputTag's id), "" for its main output. A side output has a record
	// type of its own, so Side holds its factories; the producer's are
	// for its main output. An edge with a tag is never chained.
	Tag  string
	Side *OutputFactories
}

// Output returns the factories of the producer output e carries: from's,
// or the side output's.
func (e *Edge) Output(from *Node) *OutputFactories {
	if e.Side != nil {
		return e.Side
	}
	return &from.OutputFactories
}

// Node is one logical operator. The typed API fills the factories with
// closures instantiated for the node's record types.
type Node struct {
	ID             int
	Name           string
	UID            string
	Parallelism    int
	MaxParallelism int
	// ExplicitParallelism is set when the program chose the node's
	// parallelism (Stream.Parallelism) rather than taking the job's
	// default: a rescale of the default leaves the node as it is.
	ExplicitParallelism bool
	Inputs              []Edge

	// NewOperator creates the operator instance of one subtask for one
	// attempt.
	NewOperator func(subtask int) Operator
	// InputOf adapts an operator to gate data: it returns a function that
	// takes a Buffer.Data (a *network.Batch[In]) and pushes its records.
	// Nil for sources.
	InputOf func(op Operator) (InputFunc, error)
	// InputsOf replaces InputOf for a node whose inputs carry different
	// record types (a two-input operator): it returns one InputFunc per
	// input edge, in the order of Inputs, and the task dispatches each
	// gate channel to its edge's function.
	InputsOf func(op Operator) ([]InputFunc, error)
	// OutputFactories are those of the node's main output.
	OutputFactories
	// SideOutputs says the node's operator has side outputs
	// (SideOutputSetter), so edges with a Tag may leave it.
	SideOutputs bool
	// States are the states the program declares for the operator (nil:
	// none). A restore checks the checkpoint's state table against them
	// before anything is deployed (checkStates), and `savepoint check`
	// reports them.
	States *state.OperatorDeclarations
	// AlignedBarriers says the node's task aligns barriers even when the
	// job takes unaligned checkpoints, and its producers send barriers to
	// it in band, never as priority events. An operator whose subtasks
	// must snapshot at the same point of an input sets it: a broadcast
	// state operator stores one copy of its state for all subtasks, which
	// is right only when each snapshotted after the same broadcast records
	// (docs/architecture.md, "Broadcast state").
	AlignedBarriers bool
}

// OutputFactories make what carries one typed output of a node (its main
// output, or a side output): the typed API fills them with closures
// instantiated for the output's record type.
type OutputFactories struct {
	// Combine merges several downstream consumers of this node's output
	// (each an Output[Out]: a chained operator or a writer) into one.
	Combine func(outs []any) (any, error)
	// NewPool creates a batch pool for this node's output type.
	NewPool func(batchSize int) any
	// NewWriter creates a typed writer for one outgoing edge over its
	// channels, one per consumer subtask (local network.Channels or remote
	// channels); it adds the records it emits to recordsOut (once per
	// batch).
	NewWriter func(channels []network.Sender, e Edge, pool any, self, maxParallelism int, recordsOut *atomic.Int64, opts ...network.WriterOption) (Writer, error)
	// NewChannelCodec returns the codec that stores this node's output
	// batches as channel state (unaligned checkpoints); it fails when the
	// output type cannot be encoded. Nil for nodes without output.
	NewChannelCodec func(batchSize int) (ChannelCodec, error)
	// OutType names the node's output record type, for messages.
	OutType string
	// Timed says the output's records carry event timestamps
	// (network.Batch.Times): the node assigns them, or one of its inputs
	// is timed. Its writers then send the timestamps with the records.
	Timed bool
}

// InputFunc processes one data buffer from the gate (a *network.Batch[T],
// whose Times it passes on with the records) and returns the number of
// records in it.
type InputFunc func(ctx context.Context, data any) (int, error)

// Writer is the type-erased face of a network.Writer[T]: the task needs it
// only to flush and to broadcast events.
type Writer interface {
	Flush(ctx context.Context) error
	Broadcast(ctx context.Context, b network.Buffer) error
	// BroadcastPriority sends an event ahead of the data its consumers
	// have queued (an unaligned barrier, a cancel marker); it never waits
	// for credit.
	BroadcastPriority(b network.Buffer) error
}

// Graph is the logical graph assembled by the API.
type Graph struct {
	Nodes []*Node // index == ID
}

// Add appends a node, assigning its ID.
func (g *Graph) Add(n *Node) *Node {
	n.ID = len(g.Nodes)
	g.Nodes = append(g.Nodes, n)
	return n
}

// Vertex is a chain of nodes executed by one task per subtask.
type Vertex struct {
	ID          int
	Chain       []*Node // head first
	Parallelism int
	// Inputs are the edges into the head, with the producing vertex.
	Inputs []VertexInput
	// Outputs lists the edges leaving the vertex. Only the last node of a
	// chain has consumers outside it (a node is chained only into its sole
	// consumer).
	Outputs []VertexOutput
}

// Name joins the chain's node names, as Flink shows chained operators.
func (v *Vertex) Name() string {
	s := ""
	for i, n := range v.Chain {
		if i > 0 {
			s += " -> "
		}
		s += n.Name
	}
	return s
}

// IsSource reports whether the vertex has no inputs.
func (v *Vertex) IsSource() bool { return len(v.Inputs) == 0 }

// VertexInput is an edge from another vertex into this vertex's head.
type VertexInput struct {
	From *Vertex
	Edge Edge
	// Index of this input among the consumer's inputs; channel indices in
	// the gate are laid out input by input.
	Index int
}

// VertexOutput is an edge leaving the vertex from chain node Node.
type VertexOutput struct {
	Node *Node
	To   *Vertex
	Edge Edge
	// InputIndex is the edge's index among To's inputs.
	InputIndex int
}

// JobGraph is the chained graph.
type JobGraph struct {
	Vertices []*Vertex
	// MaxParallelism is the number of key groups shared by all keyed
	// operators of the job.
	MaxParallelism int
}

// BuildJobGraph validates g and chains it. A node is chained to its single
// producer when the edge is Forward, parallelism is equal and the producer
// has no other consumer; a Forward edge between different parallelisms is
// turned into Rebalance, as Flink does.
func BuildJobGraph(g *Graph, maxParallelism int) (*JobGraph, error) {
	consumers := make([][]int, len(g.Nodes))
	uids := map[string]string{}
	for _, n := range g.Nodes {
		if n.Parallelism < 1 {
			return nil, fmt.Errorf("operator %q: parallelism %d must be at least 1", n.Name, n.Parallelism)
		}
		if n.MaxParallelism == 0 {
			n.MaxParallelism = maxParallelism
		}
		if err := keygroup.ValidateParallelism(n.Parallelism, n.MaxParallelism); err != nil {
			return nil, fmt.Errorf("operator %q: %w", n.Name, err)
		}
		if prev, dup := uids[n.UID]; dup {
			return nil, fmt.Errorf("operators %q and %q share the uid %q: uids match state to operators on restore and must be unique", prev, n.Name, n.UID)
		}
		uids[n.UID] = n.Name
		for i, e := range n.Inputs {
			if e.From < 0 || e.From >= n.ID {
				return nil, fmt.Errorf("operator %q: input from unknown operator %d", n.Name, e.From)
			}
			if e.Partition == Forward && g.Nodes[e.From].Parallelism != n.Parallelism {
				n.Inputs[i].Partition = Rebalance
			}
			if e.Partition == Hash && e.KeyHash == nil {
				return nil, fmt.Errorf("operator %q: hash edge without a key", n.Name)
			}
			if (e.Tag == "") != (e.Side == nil) {
				return nil, fmt.Errorf("operator %q: side output edge %q without its factories", n.Name, e.Tag)
			}
			consumers[e.From] = append(consumers[e.From], n.ID)
		}
	}
	vertexOf := make([]*Vertex, len(g.Nodes))
	jg := &JobGraph{MaxParallelism: maxParallelism}
	for _, n := range g.Nodes {
		if len(n.Inputs) == 1 {
			e := n.Inputs[0]
			p := g.Nodes[e.From]
			if e.Partition == Forward && e.Tag == "" && len(consumers[p.ID]) == 1 && p.Parallelism == n.Parallelism {
				v := vertexOf[p.ID]
				if v.Chain[len(v.Chain)-1] == p {
					v.Chain = append(v.Chain, n)
					vertexOf[n.ID] = v
					continue
				}
			}
		}
		v := &Vertex{ID: len(jg.Vertices), Chain: []*Node{n}, Parallelism: n.Parallelism}
		jg.Vertices = append(jg.Vertices, v)
		vertexOf[n.ID] = v
	}
	for _, v := range jg.Vertices {
		head := v.Chain[0]
		for i, e := range head.Inputs {
			from := vertexOf[e.From]
			v.Inputs = append(v.Inputs, VertexInput{From: from, Edge: head.Inputs[i], Index: i})
			from.Outputs = append(from.Outputs, VertexOutput{Node: g.Nodes[e.From], To: v, Edge: e, InputIndex: i})
		}
	}
	for _, v := range jg.Vertices {
		sort.SliceStable(v.Outputs, func(i, j int) bool { return v.Outputs[i].To.ID < v.Outputs[j].To.ID })
	}
	return jg, nil
}
