// Package weakrt is the runtime of WEAKLY_CONSISTENT mode
// (docs/weak-consistency.md, docs/architecture.md "Weakly consistent
// mode"): the side that performs what the mode's pure cores in
// internal/weak decide. No barriers; each task snapshots on its own
// schedule, and a failed task restarts alone, replayed from its
// producers' in-flight logs.
//
// A walk through its files:
//
//   - executor.go: Mode, the runtime.RecoveryMode that internal/plan sets
//     on runtime.JobConfig.Recovery; the TaskExecutor's part of a job
//     (weakRegistry as runtime.JobRecovery: who hears of a snapshot,
//     executions' ends, figures) and of each execution (execRecovery:
//     its outputs are logs, its remote inputs follow their producers).
//   - registry.go: what a TaskExecutor keeps of a job across task
//     failures: every channel's log, each consumer's determinants, the
//     positions of pending snapshots.
//   - sender.go, logcache.go, logfile.go: one output channel's in-flight
//     log (a network.Sender that asks weak.Output for a verdict on each
//     buffer), the encoded copy a snapshot stores, and its file format.
//   - task.go: the task's part (weakTask, a runtime.Recovery): positions,
//     determinants, the replay of a restarted attempt.
//   - remote.go, relocate.go: consumers on other TaskManagers; inputs that
//     follow a producer moved after its TaskManager was lost.
//   - restore.go: a whole-job restart from each task's newest snapshot
//     (runtime.RecoveryMode.InitialRestore).
//
// Owns: the mode's logs, replay and per-task restore. Must not touch: the
// task loop, the TaskExecutor or the JobMaster except through the views
// internal/runtime hands it (runtime.TaskView, ExecInfo, RestoreView,
// JobMasterView); internal/runtime never imports this package
// (internal/archtest).
package weakrt
