// # Per-task snapshots (snapshots*.go)
//
// Snapshots is the JobMaster's bookkeeping of every task's own snapshots,
// a pure state machine in the manner of the checkpoint coordinator: events
// in (Running, Down, Finished, EndOfData, Ack, Decline, Persisted, Tick,
// Request), actions out (Trigger, Persist, Complete, Abort). It does no IO,
// starts no goroutine and reads no clock; time comes with each event.
//
//	s := weak.NewSnapshots(weak.Config{Interval: time.Second}, tasks)
//	s.Step(weak.Running{Task: t, Now: now})     // t's first snapshot is due at now + 1s*(i+1)/n
//	s.Step(weak.Tick{Now: due})                 // Trigger{t, 1, Periodic}
//	s.Step(weak.Ack{Task: t, ID: 1, State: st}) // Persist{t, 1, st}: write t's metadata
//	s.Step(weak.Persisted{ID: 1})               // Complete{t, 1, Discard: t's previous}
//
// Why per task: a barrier checkpoint succeeds only if every task's
// snapshot does, so with n tasks it succeeds with roughly p^n for a task's
// success rate p (0.99 per task is 0.72 for 32 tasks;
// docs/weak-consistency.md; weir bench weak measures it). Here a decline, a
// timeout or a failed metadata write fails only that task's snapshot: the
// task keeps its previous one as its restore point, and no other task's
// bookkeeping changes.
//
// The rules:
//
//   - A task's periodic snapshots are spread so that tasks do not snapshot
//     at once: task i of n (in the order given to NewSnapshots) is first
//     due Interval*(i+1)/n after it first runs (all run at about the
//     job's start), then Interval after its previous snapshot ended
//     (completed or failed). A restarted task is next due Interval after
//     it runs again. Interval 0: no periodic snapshots.
//   - At most one snapshot per task is in flight, from its Trigger until it
//     completes or fails; ids come from one increasing counter.
//   - Only a running task is triggered. Down (the task failed, was lost or
//     cancelled) aborts its snapshot unless it was acknowledged: a
//     metadata write in flight is waited for (Persisting), because a write
//     that completes must be the one the restarted task restores.
//   - Timeout runs from the trigger to the acknowledgement; a metadata
//     write in flight is not timed out (it cannot be taken back).
//   - EndOfData makes the task's next snapshot its final one (Kind Final),
//     triggered at once, or the moment the one in flight ends. A failed
//     final snapshot is taken again an Interval later (at once with
//     Interval 0). After a completed final snapshot the task is triggered
//     no more: it finishes.
//   - Complete names the task's previous completed snapshot to discard: a
//     task restores only its newest. The one a task is restoring is never
//     discarded, because no newer one of that task completes before the
//     restored task ran and acknowledged it.
//
// Owns: which task snapshots when and which snapshot each task restores.
// Must not touch: TaskManagers, storage, goroutines or the clock (checked
// by internal/archtest); the JobMaster's Machine performs the actions.
//
// (This file continues the package documentation in doc.go; it is not
// itself the package comment.)

package weak
