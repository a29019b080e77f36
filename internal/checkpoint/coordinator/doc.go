// Package coordinator is the JobManager side of aligned checkpointing: it
// decides when checkpoints start, collects the tasks' acknowledgements,
// completes, aborts and subsumes checkpoints, and counts failures, the way
// Flink's CheckpointCoordinator does. Unlike Flink's, it is a pure state
// machine in the manner of etcd raft: no goroutines, no clock reads, no IO,
// no locks. Time enters only through events.
//
// A driver goroutine owns one Coordinator and loops:
//
//	c := coordinator.New(cfg, tasks, sources, restoredID+1, clock.Now())
//	for {
//		d, ok := c.NextDeadline() // arm a timer for d if ok
//		var ev coordinator.Event
//		select {
//		case now := <-timer:    ev = coordinator.Tick{Now: now}
//		case msg := <-fromTasks: ev = msg // Ack or Decline
//		case res := <-storage:   ev = coordinator.Persisted{ID: res.ID, Err: res.Err, Now: clock.Now()}
//		case <-regionFailing:    ev = coordinator.Suspend{Reason: "region 1 is restarting"}
//		case <-allRunning:       ev = coordinator.Resume{Now: clock.Now()}
//		...
//		}
//		for _, a := range c.Step(ev) {
//			switch a := a.(type) {
//			case coordinator.Trigger:        // send the trigger to every source
//			case coordinator.Persist:        // write chk-<ID>/_metadata, then feed Persisted
//			case coordinator.NotifyComplete: // tell every task (sinks commit)
//			case coordinator.Abort:          // tell every task, discard chk-<ID>
//			case coordinator.Failover:       // restart the job (no Reset needed)
//			case coordinator.Rejected:       // answer the user's trigger request
//			}
//		}
//	}
//
// A checkpoint is pending from its Trigger until every task acked it; it is
// then persisting until its Persisted event, and nothing else (acks,
// declines, timeouts, subsumption, Reset) touches it meanwhile. It ends in
// exactly one NotifyComplete or Abort. Failures (decline, timeout, failed
// metadata write) count towards execution.checkpointing.tolerable-failed-
// checkpoints; a completion resets the count; a failed final checkpoint
// always asks for a failover.
//
// Failures have a Cause. A storage failure (a task's snapshot write or the
// metadata write failing: disk full, I/O error, S3 away) is counted but not
// towards the tolerable failures and never asks for a failover, since no
// restart can fix storage: checkpoints back off instead, storage is probed
// each interval so a recovery is seen within one, an alert goes out at
// most every AlertEvery, and the job fails for good (FailJob) past
// StorageFailureTimeout or before a two-phase-commit sink's open
// transaction would outlive TransactionTimeout (storage.go,
// testdata/storage.txt).
//
// One coordinator serves a job for its whole life, across region
// failovers: Suspend aborts what is pending (as Reset does) and stops
// triggering until Resume, so a checkpoint never waits for tasks that are
// being restarted; an on-demand trigger meanwhile is rejected with the
// suspension's reason.
//
// Two choices go beyond Flink's text:
//
//   - A checkpoint persisting during a Reset completes if its metadata write
//     succeeds, because a checkpoint whose metadata exists is a checkpoint.
//     The driver therefore waits until Persisting is empty before it
//     restores the newest completed checkpoint. A failed write of such a
//     checkpoint is aborted without counting as a failure of the new attempt.
//   - Ack, Decline, Reset and Suspend carry no time. A failure or reset they cause is
//     stamped with the time of the next timed event (NextDeadline asks for
//     one at once), so the min pause and the restarted interval are never
//     shorter than configured.
//
// Owns: when checkpoints trigger, complete, abort and count as failed. Must
// not touch: storage, the TaskManagers, goroutines or the clock; the
// JobMaster performs its actions and feeds back their results (checked by
// internal/archtest).
package coordinator
