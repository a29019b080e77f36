package weir

import (
	"fmt"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dataflow"
)

// Stream is a typed stream of records of type T.
type Stream[T any] struct {
	env  *Env
	node *dataflow.Node
}

// Name sets the operator's display name.
func (s Stream[T]) Name(name string) Stream[T] {
	s.node.Name = name
	return s
}

// UID sets the operator's stable id. State is matched to operators by uid
// when a job restores, so give every stateful operator one and keep it.
func (s Stream[T]) UID(uid string) Stream[T] {
	s.node.UID = uid
	return s
}

// Parallelism sets how many subtasks run the operator.
func (s Stream[T]) Parallelism(p int) Stream[T] {
	setParallelism(s.env, s.node, p)
	return s
}

func setParallelism(env *Env, n *dataflow.Node, p int) {
	if p < 1 {
		env.fail(fmt.Errorf("operator %q: parallelism %d must be at least 1", n.Name, p))
		return
	}
	n.Parallelism = p
	n.ExplicitParallelism = true
}

// Env returns the stream's environment.
func (s Stream[T]) Env() *Env { return s.env }

// newNode adds an operator node producing Out records.
func newNode[Out any](env *Env, kind string, inputs []dataflow.Edge, mk func(subtask int) dataflow.Operator) *dataflow.Node {
	n := env.p.Graph.Add(&dataflow.Node{
		Name:        kind,
		Parallelism: env.p.Config.Int(config.ParallelismDefault),
		Inputs:      inputs,
		NewOperator: mk,
	})
	n.UID = fmt.Sprintf("%s-%d", kind, n.ID)
	for _, e := range inputs {
		// Records keep their timestamps through every operator unless one
		// assigns new ones (timestamps are static per edge: a writer sends
		// them for all its records or for none).
		n.Timed = n.Timed || env.p.Graph.Nodes[e.From].Timed
	}
	outputFactories[Out](&n.OutputFactories)
	return n
}

func forward(from *dataflow.Node) []dataflow.Edge {
	return []dataflow.Edge{{From: from.ID, Partition: dataflow.Forward}}
}

// Map applies f to every record.
func Map[T, U any](s Stream[T], f func(T) U) Stream[U] {
	n := newNode[U](s.env, "Map", forward(s.node), func(int) dataflow.Operator { return &mapOp[T, U]{f: f} })
	inputFactory[T](n)
	return Stream[U]{env: s.env, node: n}
}

// FlatMap applies f to every record; f emits zero or more records.
func FlatMap[T, U any](s Stream[T], f func(T, *Collector[U]) error) Stream[U] {
	n := newNode[U](s.env, "FlatMap", forward(s.node), func(int) dataflow.Operator {
		o := &flatMapOp[T, U]{f: f}
		o.col.sides = &o.sideOutputs
		return o
	})
	n.SideOutputs = true
	inputFactory[T](n)
	return Stream[U]{env: s.env, node: n}
}

// Filter keeps the records for which keep returns true.
func Filter[T any](s Stream[T], keep func(T) bool) Stream[T] {
	n := newNode[T](s.env, "Filter", forward(s.node), func(int) dataflow.Operator { return &filterOp[T]{keep: keep} })
	inputFactory[T](n)
	return Stream[T]{env: s.env, node: n}
}

// Union merges streams of the same type. Records of different inputs
// interleave in no particular order; each input's order is kept.
func Union[T any](s Stream[T], others ...Stream[T]) Stream[T] {
	edges := forward(s.node)
	for _, o := range others {
		if o.env != s.env {
			s.env.fail(fmt.Errorf("union of streams from different environments"))
		}
		edges = append(edges, dataflow.Edge{From: o.node.ID, Partition: dataflow.Forward})
	}
	if len(others) > 0 {
		// Several inputs can never chain; rebalance keeps each input's
		// records spread evenly whatever the parallelisms.
		for i := range edges {
			edges[i].Partition = dataflow.Rebalance
		}
	}
	n := newNode[T](s.env, "Union", edges, func(int) dataflow.Operator { return &mapOp[T, T]{f: identity[T]} })
	inputFactory[T](n)
	return Stream[T]{env: s.env, node: n}
}

func identity[T any](v T) T { return v }

// Rebalance spreads records round-robin over the next operator's subtasks.
func Rebalance[T any](s Stream[T]) Stream[T] {
	n := newNode[T](s.env, "Rebalance", []dataflow.Edge{{From: s.node.ID, Partition: dataflow.Rebalance}}, func(int) dataflow.Operator { return &mapOp[T, T]{f: identity[T]} })
	inputFactory[T](n)
	return Stream[T]{env: s.env, node: n}
}
