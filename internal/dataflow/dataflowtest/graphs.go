// Package dataflowtest builds small logical graphs for tests: nodes with
// only the fields graph building reads.
package dataflowtest

import "github.com/weirstream/weir/internal/dataflow"

// Graph builds a logical graph of nodes, giving each node without a UID
// its name as UID.
func Graph(nodes ...*dataflow.Node) *dataflow.Graph {
	g := &dataflow.Graph{}
	for _, n := range nodes {
		if n.UID == "" {
			n.UID = n.Name
		}
		g.Add(n)
	}
	return g
}

// Node is a node named name with parallelism p and the given inputs.
func Node(name string, p int, inputs ...dataflow.Edge) *dataflow.Node {
	return &dataflow.Node{Name: name, Parallelism: p, Inputs: inputs}
}

// Fwd is a forward edge from node from.
func Fwd(from int) dataflow.Edge { return dataflow.Edge{From: from, Partition: dataflow.Forward} }

// Hash is a hash edge from node from, every record on key group 0.
func Hash(from int) dataflow.Edge {
	return dataflow.Edge{From: from, Partition: dataflow.Hash, KeyHash: func(int) uint32 { return 0 }}
}
