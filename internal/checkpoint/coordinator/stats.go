package coordinator

import (
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Stats is a snapshot of the coordinator's counters, plain values for the
// metrics layer (Flink's numberOfCompletedCheckpoints and friends).
//
// Every triggered checkpoint is counted in exactly one of Completed, Failed,
// Aborted and InProgress: Triggered is their sum.
type Stats struct {
	// Triggered counts checkpoints started (periodic, on demand and final).
	Triggered int
	// Completed counts checkpoints whose metadata was persisted
	// (numberOfCompletedCheckpoints).
	Completed int
	// Failed counts declined, timed-out and unpersisted checkpoints
	// (numberOfFailedCheckpoints).
	Failed int
	// Aborted counts checkpoints abandoned without failing: subsumed by a
	// newer completed one, or dropped by a Reset or Failover.
	Aborted int
	// InProgress counts pending checkpoints, persisting ones included
	// (numberOfInProgressCheckpoints).
	InProgress int
	// LastCompletedID is the newest completed checkpoint, 0 if none.
	LastCompletedID checkpoint.ID
	// LastCompletedDuration is the time from trigger to persisted metadata of
	// LastCompletedID (lastCheckpointDuration).
	LastCompletedDuration time.Duration
	// ConsecutiveFailures counts failures since the last completion or
	// failover.
	ConsecutiveFailures int
	// FailedByCause counts Failed by cause (declined, timeout, storage).
	FailedByCause [numCauses]int
	// StorageFailing is true from a storage failure until the next
	// completed checkpoint (checkpointStorageFailing), since
	// StorageFailingSince.
	StorageFailing      bool
	StorageFailingSince time.Time
}

// Stats returns the current counters.
func (c *Coordinator) Stats() Stats {
	s := c.stats
	s.InProgress = len(c.pending)
	s.ConsecutiveFailures = c.consecutive
	s.StorageFailing, s.StorageFailingSince = c.storage.failing, c.storage.since
	return s
}
