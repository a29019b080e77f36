// Package failover computes what fails together. Regions splits a job's
// subtasks into pipelined regions, as Flink's region failover strategy does
// for streaming jobs: subtasks exchanging data are in one region, so a
// failure restarts its region from the newest completed checkpoint while
// the other regions run on. No data flows between regions, so one region
// restored to checkpoint N beside others past N is still consistent.
//
// A Forward edge between vertices of equal parallelism connects subtask i
// of the producer with subtask i of the consumer only; every other edge
// (hash, rebalance, broadcast, or a forward edge between different
// parallelisms) connects every producer subtask with every consumer
// subtask and so joins both vertices' subtasks into one region.
//
// Walkthrough, source(2) -forward-> map(2) -hash-> sink(2) and a
// forward-only pipeline a(2) -forward-> b(2):
//
//	regions := failover.Regions(jg)
//	// [[{0 0} {0 1} {1 0} {1 1} {2 0} {2 1}]  the keyed pipeline
//	//  [{3 0} {4 0}]                          a and b, subtask 0
//	//  [{3 1} {4 1}]]                         a and b, subtask 1
//	idx := failover.RegionIndex(regions)
//	idx[checkpoint.TaskID{Vertex: 4, Subtask: 1}] // 2: restart region 2
//
// Each region is sorted by TaskID (vertex, then subtask) and regions are
// numbered by their smallest TaskID, so the numbering is deterministic.
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
