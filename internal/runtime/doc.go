// Package runtime executes a job graph: it chains operators into tasks, runs
// one goroutine per subtask with a mailbox loop, wires the tasks with
// credit-bounded channels, and drives the checkpoint protocol.
//
// A walk through one job:
//
//  1. The typed API (package weir) builds a logical graph of Nodes
//     (internal/dataflow, the vocabulary operators and the runtime share).
//     Each Node carries type-erased factories made in generic code, so the
//     runtime never needs to know a record type, and no record is ever
//     boxed: operators, pools and writers are typed; the runtime only
//     connects them once, at deployment, with a type assertion per link.
//  2. dataflow.BuildJobGraph chains nodes joined by forward edges of equal
//     parallelism into Vertices. Each vertex runs as Parallelism subtasks
//     (Tasks).
//  3. A JobMaster (jobmaster*.go) runs the job. Its rules are a pure state
//     machine, internal/jobmaster's Machine, which composes the checkpoint
//     coordinator (one for the job's whole life) and the failover handler
//     (internal/failover) over the job's pipelined regions (region.go): a
//     failed task cancels only its region, which restarts from the newest
//     completed checkpoint while checkpointing is suspended and the other
//     regions run on. The JobMaster is its driver: one goroutine feeds it
//     reports, ticks and requests and performs its actions through the
//     gateways; storage actions (metadata writes, LoadLatest, savepoint
//     copies, retention and shared-file GC) run on a worker whose results
//     come back as events, so the loop never waits for storage. Under high
//     availability a CheckpointRegistry (registry.go) registers each
//     written checkpoint on that worker, and only a registered one is
//     complete, told and restored.
//  4. A TaskExecutor (taskexecutor.go, deploy.go, partitions.go, links.go)
//     runs the tasks of the Deployments it receives: it builds gates,
//     writers and tasks, connects producers to their consumers' gates (in
//     process on one TaskManager, through remote.OutChannel and
//     remote.InputChannel of its data plane between TaskManagers, records
//     encoded with the edge's ChannelCodec), runs one goroutine per task and
//     reports state changes, acks, declines and end of data back.
//  5. A Task (task*.go) polls its input gate batch by batch, feeds barriers
//     to the barrier handler — also a pure state machine — and performs its
//     actions: block channels, snapshot the chain (synchronous part on the
//     task goroutine, serialization and writing on another), forward the
//     barrier. Control messages enter through the mailbox and are handled
//     between batches.
//  6. Bounded inputs end with EndOfData flowing downstream; every operator
//     flushes; once all tasks reported it, the JobMaster takes a final
//     checkpoint, and tasks finish after its notify-complete, so that
//     two-phase-commit sinks commit their last transaction.
//
// JobMaster and TaskExecutor talk only through two gateways
// (internal/deployment): TaskManagerGateway (deploy, cancel, trigger,
// notify, stop sources) and JobMasterGateway (job prepared, task state
// changed, acknowledge, decline, end of data), with plain-data messages
// (Deployment, TaskDeployment, ChannelDesc, RestoreRef; built from the job
// graph in task_deployments.go) and executions named by ExecutionID, so
// that a report of a cancelled attempt is recognised and dropped. Execute
// is local mode: one JobMaster and one in-process TaskExecutor joined by
// the local gateways (gateway_local.go: direct calls one way, the
// JobMaster's inbox the other: the same unbounded queue type as a task's
// mailbox), or with JobConfig.LocalTaskManagers > 1 several TaskExecutors,
// each with its own data plane on loopback (localcluster.go), so that
// records between them cross TCP as in a cluster. Cluster mode puts the
// control-plane stream behind the same interfaces and a TaskExecutor in
// every TaskManager; one runtime, not two.
//
// The job's status is not the runtime's: internal/jobstatus holds the read
// model that REST, metrics and the run summary read (JobConfig.Status).
// The runtime writes it through a jobstatus.Recorder — the JobMaster
// driver its states, checkpoints, failures and restores, the tasks their
// source records and restored channel state — and takes the job's
// commands (checkpoint, savepoint, stop) through JobControl (control.go),
// a jobstatus.Control whose requests the driver's loop serves.
//
// Owns: the JobMaster's driver (its goroutine, gateways, storage worker,
// placement, the JobControl it serves), TaskExecutors, tasks and their
// mailbox loops, deployments, channel wiring, restore assembly and local
// mode. Must not touch: the shape of the job's read model (jobstatus) or
// of the deployment vocabulary (deployment), which it imports and never
// the reverse; the rules of checkpointing, failover and the job's
// lifecycle, which live in the pure cores it drives (internal/jobmaster,
// coordinator, barrier, failover); the public API or connectors (checked
// by internal/archtest).
package runtime
