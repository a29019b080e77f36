// Package failover decides what fails together and when it restarts. The
// regions it works on are the pipelined regions of runtime.Regions: subtasks
// exchanging data are in one region, so a failure restarts its region from
// the newest completed checkpoint while the other regions run on. The
// package takes regions as plain lists of TaskIDs and does not import the
// runtime, whose JobMaster drives the Handler.
//
// Walkthrough, source(2) -forward-> map(2) -hash-> sink(2) beside a
// forward-only pipeline a(2) -forward-> b(2):
//
//	regions := runtime.Regions(jg)
//	// [[{0 0} {0 1} {1 0} {1 1} {2 0} {2 1}]  the keyed pipeline
//	//  [{3 0} {4 0}]                          a and b, subtask 0
//	//  [{3 1} {4 1}]]                         a and b, subtask 1
//	idx := failover.RegionIndex(regions)
//	idx[checkpoint.TaskID{Vertex: 4, Subtask: 1}] // 2: restart region 2
//
// Handler is the pure state machine that acts on failures, in the manner of
// raft's Step: the JobMaster feeds it events (TaskFailed, TaskManagerLost,
// GlobalFailure, TaskTerminal, TaskRunning, Tick) and performs the actions
// it returns (SuspendCheckpointing, Cancel, ArmTimer, Restart,
// ResumeCheckpointing, FailJob). A region goes RUNNING → CANCELING (until
// its other tasks are terminal) → WAITING (the restart delay, counted from
// the failure) → RESTORING (until every task runs) → RUNNING:
//
//	h := failover.NewHandler(regions, restart.NewFixedDelay(3, time.Second))
//	h.Step(failover.TaskFailed{Task: t41, Err: err, Now: now})
//	// SuspendCheckpointing, Cancel{3/1}, ArmTimer{now+1s}
//	h.Step(failover.TaskTerminal{Task: t31})           // nothing yet
//	h.Step(failover.Tick{Now: now.Add(time.Second)})  // Restart{[2]}
//
// Every failure event asks the restart strategy once and counts one
// restart (Flink's numRestarts), however many regions it hits: a lost
// TaskManager that ran tasks of two regions is one failure. A refusal or an
// unrecoverable error fails the job; the JobMaster then cancels whatever
// still runs, and the handler ignores every later event. A failure in a
// region already failing does not fail it again, but a task that fails
// while being cancelled counts as stopped. A global failure (the
// coordinator's Failover) restarts every region that is not already
// failing, once. Checkpointing stays suspended from the first failure until
// every task of the job runs again.
//
// The JobMaster drops events of superseded attempts before they reach the
// handler: a TaskFailed of a region being restored is taken as a failure
// of its new attempt.
//
// Owns: what fails together and when it restarts. Must not touch:
// executions, TaskManagers, storage or the clock; the JobMaster performs
// its actions (checked by internal/archtest).
package failover
