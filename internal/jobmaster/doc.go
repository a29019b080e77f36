// Package jobmaster holds the rules of one running job as a pure state
// machine: which executions run where and in which state, the checkpoint
// coordinator and the failover handler it composes, the final checkpoint,
// stop and savepoint requests, slot waiting and the choice of restore
// point. It does no IO and starts no goroutine; internal/runtime's
// JobMaster is its driver (a loop, the TaskManager gateways, a storage
// worker), in the manner of etcd raft's Step and of the coordinator and
// failover handler it composes.
//
// # Events in, actions out
//
// The driver feeds Step one Event at a time, with the time (time is an
// input: the Machine reads no clock), and performs the Actions returned,
// in order:
//
//	m := jobmaster.New(cfg, now)
//	m.Step(now, jobmaster.Start{})           // PrepareJob{tm} per executor
//	m.Step(now, jobmaster.Prepared{})        // Deploy{groups by TM, slots, restore}
//	m.Step(now, jobmaster.StateChanged{...}) // RUNNING, then terminal
//	m.Step(now, jobmaster.Tick{})            // at NextDeadline: TriggerCheckpoint{id, groups}
//	m.Step(now, jobmaster.Ack{...})          // the last: PersistMetadata{id, states}
//	m.Step(now, jobmaster.StoreDone{ID: 5})  // NotifyComplete{5, tms}, Retain{5}
//
// Under high availability (Config.Register) a written checkpoint is
// registered before it completes:
//
//	m.Step(now, jobmaster.StoreDone{ID: 5})  // RegisterCheckpoint{5}
//	m.Step(now, jobmaster.Registered{ID: 5}) // NotifyComplete{5, tms}, Retain{5}
//
// Events: Start, Prepared, StateChanged, Ack, Decline, EndOfData (from
// TaskManagers); StoreDone, Registered, LatestLoaded, SavepointCopied,
// IDsReserved, Swept (results of storage actions); SlotsOffered, TaskManagerLost (from the
// JobManager); Tick; Request (checkpoint, savepoint, stop); Cancel.
//
// Actions: PrepareJob, Deploy, CancelExecs, TriggerCheckpoint,
// StopSources, NotifyComplete, NotifyAborted (gateway calls, each fan-out
// grouped by TaskManager once, in groups); PersistMetadata,
// RegisterCheckpoint, LoadLatest, CopySavepoint, Retain, Discard,
// SweepShared, ReserveIDs (storage);
// Answer, Failure, ReleaseJob, JobEnded.
//
// Reports of an execution that is not its task's current attempt are
// dropped before any rule sees them: they come from a cancelled attempt.
//
// # Storage is an action, never a call
//
// Everything that touches checkpoint storage is an action whose result
// comes back as an event: a metadata write (StoreDone), a checkpoint's
// registration (Registered), the newest
// restorable checkpoint (LatestLoaded), a savepoint copy
// (SavepointCopied), the checkpoint-id reservation (IDsReserved). The
// driver performs them on one worker, in order, so acks, declines and
// failures are handled while S3 is slow. The Machine relies on that
// order in one place: the CopySavepoint of a completed checkpoint comes
// before the Retain that may remove it. It tracks what is in flight so
// that no rule depends on timing:
//
//   - a restart asks for LoadLatest only once no metadata write (nor,
//     with Config.Register, registration) is in flight (a write that
//     completes must be the checkpoint restored), and
//     deploys when LatestLoaded arrives; regions that became due
//     meanwhile restart with it (no checkpoint can complete meanwhile:
//     checkpointing stays suspended until every restarted task runs);
//   - a barrier of a checkpoint id at or above the reserved bound waits
//     for IDsReserved, so a JobManager restarted after a crash never
//     reuses an id; a failed reservation is logged and lets it go;
//   - a barrier waits while a sweep of unreferenced shared files is in
//     flight (a Retain or Discard with Sweep, until Swept): the sweep was
//     decided while nothing was pending, and it would delete the uploads
//     of a checkpoint triggered before it ran (sweep_trigger.txt);
//   - the job ends (JobEnded) once every execution stopped and no metadata
//     write, registration or savepoint copy is in flight
//     (end_persisting.txt, register_final.txt); a stop is answered after
//     it, with its copy's result.
//
// # A checkpoint is complete once registered (high availability)
//
// With Config.Register (set under high availability) a checkpoint is
// complete only when its metadata pointer is registered, in etcd by a
// transaction fenced on the leader's term, not when its metadata is
// written: a JobManager that lost leadership or crashed in between leaves
// a metadata file that no restore may use, and no sink may commit on its
// word. So:
//
//   - a successful StoreDone emits RegisterCheckpoint (a storage action,
//     after its PersistMetadata on the driver's worker) and the checkpoint
//     stays persisting; a failed StoreDone registers nothing
//     (register_order.txt);
//   - only Registered{Err: nil} completes it: NotifyComplete (the
//     TaskManagers' commit), Retain, the savepoint copy and the final
//     checkpoint's rules come after it, never before;
//   - a refused registration is a failed checkpoint exactly as a failed
//     metadata write: aborted, its files discarded, counted against
//     tolerable-failed-checkpoints (register_fail.txt);
//   - everything that waits for metadata writes waits for registrations:
//     a restart's LoadLatest, the job's end, the held notification of a
//     final checkpoint (register_restart.txt, register_final.txt);
//   - a checkpoint subsumed while it was written (a newer one completed
//     first) is not registered: its files are about to be discarded;
//   - the driver's LoadLatest returns the newest registered checkpoint
//     that verifies, never a newer unregistered metadata file.
//
// # The rules between the coordinator and the failover handler
//
// These lived only in the old JobMaster's glue; the scripts in testdata
// show each:
//
//   - End of data is ignored while its task's region is failing: counted,
//     it would complete the end-of-data set while checkpointing is
//     suspended, and the resume would take the final checkpoint before the
//     restarted tasks read anything (eod_failing.txt, final_restart.txt).
//   - Once a final checkpoint completed and was told, tasks are finishing
//     and a finished task cannot ack another checkpoint, so any later
//     failure (or a lost TaskManager) is a global failover: every region
//     restarts and takes a new final checkpoint together
//     (final_failure.txt); once every region restarted, failures are
//     regional again (final_failure_again.txt). A TaskManager lost then
//     counts its tasks as stopped also in regions failing already
//     (final_tm_lost.txt).
//   - A region that a second failure hits while it restarts (its restore
//     point loading, or its deployment waiting for slots) is not deployed
//     by that restart: it restarts again after its new delay
//     (final_reload.txt, final_slots_refail.txt).
//   - A final checkpoint that completes while a region restarts (its
//     metadata write outlived the suspension) is not told (NotifyComplete
//     Held): the other regions' tasks would finish and never ack the final
//     checkpoint the restarted region takes again; the next final
//     checkpoint's notification covers it (final_restart.txt).
//   - A task finishes only on the completion of a final checkpoint it took
//     part in (TaskFinal, the rule internal/runtime's tasks follow): never
//     on a periodic checkpoint, and an aborted final checkpoint is
//     forgotten, so a task whose final checkpoint another region's failure
//     aborted takes part in the next one (issue 31, final_stall.txt). A
//     FINISHED report that no told final checkpoint covers (a TaskManager
//     of an older version finishes on the next checkpoint after its
//     aborted final one) is a failure that restarts every region: ignored,
//     every final checkpoint would wait for the gone task's ack until it
//     expires; a region restarted alone would abort the final checkpoint
//     the others took next, and they would finish early in turn
//     (final_stall_refused.txt).
//   - No checkpoint is triggered before the job is deployed: its barrier
//     would reach no execution and the checkpoint would stay pending until
//     its timeout, holding back a bounded job's final checkpoint
//     (trigger_before_deploy.txt).
//   - A restart waits for in-flight metadata writes
//     (failure_mid_checkpoint.txt). With the driver's in-order worker a
//     LoadLatest queued behind the write would see it anyway; the Machine
//     does not rely on that, and the held notification above needs to know.
//   - A savepoint whose checkpoint is subsumed is taken again by the next
//     checkpoint (savepoint_subsumed.txt); a savepoint in flight when its
//     region fails is answered with the abort (savepoint_failure.txt).
//   - A stop is the job's, not the attempt's: sources of a region
//     redeployed after it stop again, also when the redeployment waited
//     for slots (stop_failure.txt, stop_slots.txt).
//   - A report of a superseded attempt is dropped; a TaskManager that
//     never answers a cancel holds its region until its loss is reported
//     (lost_notification.txt); a lost TaskManager's regions restart on
//     free slots or wait for them until slot.request.timeout (tm_lost.txt).
//   - A JobManager restarted after a crash numbers attempts apart, takes
//     ids from the reserved bound and restores only its own run's
//     checkpoints, else the --from point (jm_restart.txt).
//
// TestRandomInterleavings drives random jobs through seeded random
// interleavings and checks the invariants on every action: one live
// attempt per subtask, completed checkpoints acked by every task and
// durable (and, with registration, registered) before they are told,
// restores from the newest completed (registered) one,
// barriers only below a durable id reservation; and, once nothing fails
// any more, that the job ends (no region waits forever) and no checkpoint
// expires. Its simulated tasks finish as the runtime's do (TaskFinal).
//
// # WEAKLY_CONSISTENT (Config.Weak)
//
// With Config.Weak there are no barriers and no global rollback (issue
// 14; why: docs/weak-consistency.md, "What it is for"). The coordinator stays suspended and triggers nothing;
// internal/weak's Snapshots decides when each task snapshots, and the
// Machine speaks the actions of every mode (weak.go):
//
//	m.Step(now, jobmaster.Tick{})            // TriggerCheckpoint{7, Periodic, Groups: [one exec]}
//	m.Step(now, jobmaster.Ack{Exec: x, ID: 7})     // PersistMetadata{7, States: [x's state]}
//	m.Step(now, jobmaster.StoreDone{ID: 7})  // NotifyComplete{7, Groups: [x]}, Discard{x's previous}
//	m.Step(now, jobmaster.EndOfData{Exec: x})      // TriggerCheckpoint{8, Final, Groups: [x]}
//
// The rules:
//
//   - Each task snapshots every Checkpoint.Interval, spread so tasks do not
//     snapshot at once, with at most one snapshot in flight; only a
//     RUNNING execution is triggered (weak_snapshots.txt).
//   - A decline, a timeout or a failed metadata write fails only that
//     task's snapshot (NotifyAborted and Discard for it): never a
//     failover, never counted towards tolerable failures. A completed one
//     replaces the task's previous one, which is discarded.
//     NotifyComplete and NotifyAborted name the one execution in Groups:
//     ids are not cumulative across tasks, so no other execution may be
//     told. No Retain: retention of the newest N checkpoints would delete
//     other tasks' restore points.
//   - Every task is its own region (Config.Regions is ignored): a failed
//     task restarts alone through the failover handler, after the restart
//     strategy's delay, from its own newest completed snapshot
//     (Restore{ID, Own}) or else Config.Initial; no LoadLatest. Its
//     snapshot not yet acknowledged is aborted; a metadata write of its
//     own in flight is waited for (weak_failover.txt). A lost TaskManager
//     is one failure restarting the tasks it ran, each from its own point:
//     one Deploy per restore point (weak_tm_lost.txt). No task is
//     cancelled while the job runs.
//   - A restart of the whole job (Config.WeakLatest: each task's newest
//     snapshot of an earlier run) deploys every task from its own, one
//     Deploy per restore point, a task without one from Config.Initial;
//     a task's first snapshot of this run discards the one it restored
//     (weak_restore.txt).
//   - End of data triggers the task's final snapshot; once told it
//     completed, the task finishes, and the job finishes when every task
//     did. A task failing after others finished restarts alone: there is
//     no global failover in this mode (weak_end_of_data.txt).
//   - A checkpoint request triggers every running task's snapshot now and
//     is answered with the first id; savepoints and stop-with-savepoint
//     are refused (they need a consistent cut); a stop without a target
//     stops the sources and each task finishes by its own final snapshot
//     (weak_requests.txt).
//   - High availability works as in every mode: with Config.Register a
//     written snapshot is registered before it completes; a refused
//     registration fails that snapshot only. Id reservation
//     (Config.Reserve) holds triggers as it holds barriers.
//
// WeakSnapshots and LatestSnapshot report the counts and each task's
// restore point. TestRandomInterleavingsWeak checks the mode's invariants.
//
// # Placement
//
// Placement is the one interface over local and cluster placement: local
// mode places logical slot i on executor i mod n and never runs short;
// cluster mode asks the JobManager's slot pool. Place is called from Step:
// it is an in-memory decision of the slot pool, not IO, and making it an
// action would only add a round trip to every deployment. A shortage makes
// the deployment wait (SlotsOffered or the next retry), suspends
// checkpointing, and fails the job after SlotTimeout. Both modes take the
// same path; a TaskManager is prepared before its first deployment
// unless it was prepared at Start (local mode, Config.TaskManagers).
// TaskManagers are small numbers (TM) the driver maps to gateways; a
// session that registers again is a new TM.
//
// # Deviations from the suggested shape
//
// Step takes the time as an argument instead of every event carrying one,
// and Tick only wakes the Machine: most events need the time (a failure
// starts a restart delay, an end of data may trigger), and one argument
// cannot be forgotten. Status (checkpoint statistics, job state) is not an
// action: the driver derives it from the actions it performs and from
// State and Restarts, which keeps scripts about rules. The job's initial
// restore point is chosen before the loop runs (a job that cannot restore
// is refused at submission); the Machine gets it as Config.Initial and
// chooses the restore point of every restart.
//
// # Owns and must not touch
//
// Owns: the rules of a running job. Must not touch: gateways, storage,
// goroutines or the clock; its imports are the other pure cores, and
// internal/archtest fails if that changes.
package jobmaster
