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
// Every failover asks the restart strategy once, however many regions it
// hits; a refusal or an unrecoverable error fails the job. A failure in a
// region already canceling or waiting is ignored.
package failover
