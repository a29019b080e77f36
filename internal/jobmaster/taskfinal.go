package jobmaster

import "github.com/weirstream/weir/internal/checkpoint"

// TaskFinal is a task's side of the final checkpoint: when the task may
// finish. It is the rule the Machine counts on when it accepts a FINISHED
// report (an execution finishes only once a final checkpoint it took part
// in completed and was told), kept here, pure, so that internal/runtime's
// tasks and the random interleavings test's simulated tasks follow one and
// the same rule. The zero value is a task that snapshotted no final
// checkpoint.
//
// A task finishes on the completion of its own final checkpoint (or of a
// later final one), never on a periodic checkpoint or savepoint: at
// parallelism 2 and more each chained region takes the final checkpoint
// together with the others, and a region that fails during final
// checkpoint F aborts F for everyone. The tasks of the other regions
// snapshotted F already; if they finished on the next checkpoint to
// complete (a periodic one, taken while the failed region reads its input
// again), the new final checkpoint of the restarted region would wait for
// them until execution.checkpointing.timeout (issue 31, the final-checkpoint
// stall). So an abort of F makes the task forget F, and only a completion
// that says it is of a final checkpoint finishes it.
type TaskFinal struct {
	id checkpoint.ID // the final checkpoint snapshotted, 0 if none (or aborted)
}

// Snapshotted records that the task took its part of checkpoint id of
// kind. Only a final checkpoint matters; ids increase.
func (f *TaskFinal) Snapshotted(id checkpoint.ID, kind checkpoint.Kind) {
	if kind == checkpoint.Final && id > f.id {
		f.id = id
	}
}

// Aborted records that checkpoint id was aborted: if it was the task's
// final checkpoint, the task forgets it and takes part in the next one.
// An abort of any other checkpoint (an older one, or one the task never
// snapshotted) changes nothing.
func (f *TaskFinal) Aborted(id checkpoint.ID) {
	if id == f.id {
		f.id = 0
	}
}

// Completed reports whether the completion of checkpoint id, of kind,
// finishes the task: the task snapshotted a final checkpoint, and id is
// that one or a later final one. known is false when the notification did
// not say the kind (a JobManager of an older version): the task then
// finishes only on its own final checkpoint's id. That is as safe: a
// completed checkpoint was acknowledged by every current task, so a
// final checkpoint later than the task's own would be its own (ids
// increase, Snapshotted keeps the newest); an id above it is a checkpoint
// the task took as periodic.
func (f *TaskFinal) Completed(id checkpoint.ID, kind checkpoint.Kind, known bool) bool {
	if f.id == 0 {
		return false
	}
	if !known {
		return id == f.id
	}
	return kind == checkpoint.Final && id >= f.id
}

// ID returns the final checkpoint the task snapshotted and that was not
// aborted, 0 if none.
func (f *TaskFinal) ID() checkpoint.ID { return f.id }
