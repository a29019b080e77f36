package coordinator

// Cause says why a checkpoint failed or was abandoned. The coordinator
// treats the causes differently: a storage failure is not the tasks'
// fault and no restart can fix it, so it does not count towards
// execution.checkpointing.tolerable-failed-checkpoints and never asks for
// a failover; checkpoints are retried with a backoff instead (storage.go).
type Cause uint8

const (
	// CauseDeclined: a task declined for a reason of its own (an
	// alignment given up, a snapshot error that is not the storage's).
	// The zero value, so a Decline without a cause is this.
	CauseDeclined Cause = iota
	// CauseTimeout: not every task acknowledged within
	// execution.checkpointing.timeout.
	CauseTimeout
	// CauseStorage: checkpoint storage failed — a task's snapshot write
	// or the metadata write (disk full, quota, I/O error, permission,
	// S3 unreachable or failing).
	CauseStorage
	// CauseTaskFailure: the checkpoint was abandoned because tasks
	// failed or were restarted (a Reset or Suspend); not counted as a
	// failed checkpoint.
	CauseTaskFailure
	// CauseSubsumed: a newer checkpoint completed first; not a failure.
	CauseSubsumed
	// CauseRegistration: the checkpoint's registration was refused (high
	// availability: the JobManager's leadership is in question); counted
	// towards the tolerable failures like a decline.
	CauseRegistration
	numCauses
)

// String returns the cause's name as metrics, logs and REST show it.
func (c Cause) String() string {
	switch c {
	case CauseDeclined:
		return "declined"
	case CauseTimeout:
		return "timeout"
	case CauseStorage:
		return "storage"
	case CauseTaskFailure:
		return "task-failure"
	case CauseSubsumed:
		return "subsumed"
	case CauseRegistration:
		return "registration"
	}
	return "unknown"
}

// Causes lists every cause, for metrics that export a count per cause.
func Causes() []Cause {
	out := make([]Cause, numCauses)
	for i := range out {
		out[i] = Cause(i)
	}
	return out
}
