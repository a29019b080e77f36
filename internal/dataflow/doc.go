// Package dataflow is the vocabulary the typed API and the runtime share:
// the logical graph (Graph, Node, Edge and their partitioning), the job
// graph it chains into (BuildJobGraph: Vertex, JobGraph), and the
// interfaces an operator implements and is driven through (Operator and
// its optional parts: sources, timers, watermarks, side outputs, snapshot
// kinds), with what it learns of its place in the job (OperatorContext,
// RestoredState) and the codec its output edges store in-flight records
// with (ChannelCodec).
//
// Who imports it: package weir, which implements operators and fills
// Nodes with typed factories; internal/plan, which assembles the graph;
// the runtime, which executes it. It imports no runtime, cluster or API
// package: an operator author reads this package and nothing of how tasks
// are scheduled, deployed or observed (internal/runtime,
// internal/deployment, internal/jobstatus).
//
// A change here is a change of the contract between operators and the
// engine: a new optional operator interface, a field the task fills in
// OperatorContext, a new partitioning.
package dataflow
