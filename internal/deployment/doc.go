// Package deployment is what a JobMaster and its TaskManagers say to each
// other to place and wire a job's tasks: plain data and the two gateway
// interfaces, the same in local mode (direct calls, the runtime's
// gateway_local.go) and in a cluster (internal/cluster carries every
// message over its control-plane stream).
//
//   - Names: ExecutionID (one attempt of a subtask; a report of an attempt
//     that is not the task's current one is dropped), ExecState with
//     Flink's names, ResourceID (a TaskManager).
//   - The job: JobSpec, what every role of application mode builds the
//     job's graph from (kind, arguments, configuration, fingerprint), with
//     Validate, ValidateJobName, its JSON form and DecodeJobSpec.
//   - Descriptors: a Deployment is one TaskManager's share of a region,
//     with the checkpoint to restore (RestoreRef) and a TaskDeployment per
//     execution: its logical slot, its gate's input channels in gate order
//     and its consumers per output edge, each a ChannelDesc (peer
//     execution, TaskManager, data address). WeakPeersUpdate tells a
//     TaskManager where moved producers run (WEAKLY_CONSISTENT mode).
//   - Gateways: TaskManagerGateway (JobMaster to TaskManager: PrepareJob,
//     Deploy, Cancel, Trigger, NotifyComplete, NotifyAborted, StopSources,
//     WeakPeers, ReleaseJob), JobMasterGateway (back: JobPrepared,
//     TaskStateChanged, Acknowledge, Decline, EndOfData), DataAddresser.
//     No method blocks: each queues its message.
//   - Cluster placement: Slots, the JobManager's slot pool as a JobMaster
//     sees it, which places logical slots on TaskManagers (Placement).
//
// A region restart, as these types carry it:
//
//	JobMaster ── TaskManagerGateway.Deploy(Deployment{Job: "demo",
//	               Restore: &RestoreRef{ID: 17},
//	               Tasks: []TaskDeployment{{Exec: 1/0#2, Slot: 0,
//	                 Inputs: []ChannelDesc{{Peer: 0/0#2, TM: "tm-a", DataAddress: "10.0.0.5:6121"}, …}}}})
//	TaskManager ── JobMasterGateway.TaskStateChanged("demo", 1/0#2, ExecRunning, nil)
//
// The runtime builds the descriptors from its job graph
// (task_deployments.go) and its TaskExecutor wires gates and writers from
// them; the cluster encodes them (convert.go, tmgateway.go) and
// implements the gateways and Slots.
//
// Owns: the vocabulary of deployments and the gateway contracts. Must not
// touch: the runtime (its job graph, driver, executor and tasks), the
// cluster, the job's rules (internal/jobmaster, whose ExecutionID it
// names) or any IO; it starts no goroutine (checked by internal/archtest:
// it is a lower layer).
package deployment
