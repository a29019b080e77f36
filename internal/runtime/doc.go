// Package runtime executes a job graph: it chains operators into tasks, runs
// one goroutine per subtask with a mailbox loop, wires the tasks with
// credit-bounded channels, and drives the checkpoint protocol.
//
// A walk through one job:
//
//  1. The typed API (package weir) builds a logical graph of Nodes. Each Node
//     carries type-erased factories made in generic code, so the runtime never
//     needs to know a record type, and no record is ever boxed: operators,
//     pools and writers are typed; the runtime only connects them once, at
//     deployment, with a type assertion per link.
//  2. BuildJobGraph chains nodes joined by forward edges of equal parallelism
//     into Vertices. Each vertex runs as Parallelism subtasks (Tasks).
//  3. The JobManager (jobmanager.go) restores the newest completed checkpoint,
//     deploys the tasks, and runs the checkpoint coordinator — a pure state
//     machine — feeding it acks, declines and ticks and performing the
//     actions it returns: trigger sources, persist metadata, notify, abort,
//     fail over.
//  4. A Task (task*.go) polls its input gate batch by batch, feeds barriers
//     to the barrier handler — also a pure state machine — and performs its
//     actions: block channels, snapshot the chain (synchronous part on the
//     task goroutine, serialization and writing on another), forward the
//     barrier. Control messages from the JobManager enter through the
//     mailbox and are handled between batches.
//  5. Bounded inputs end with EndOfData flowing downstream; every operator
//     flushes; once all tasks reported it, the JobManager takes a final
//     checkpoint, and tasks finish after its notify-complete, so that
//     two-phase-commit sinks commit their last transaction.
//
// The same Task and JobManager code will run across processes once the
// cluster mode adds remote channels and RPC behind TaskGateway and the
// network package's Channel.
package runtime
