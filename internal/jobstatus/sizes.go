package jobstatus

import (
	"github.com/weirstream/weir/internal/checkpoint"
)

// Sizes are a checkpoint's two sizes, as Flink reports them: what
// this checkpoint persisted (checkpointed_size, lastCheckpointSize) and the
// whole state it references (state_size, lastCheckpointFullSize). They
// differ for incremental checkpoints, whose shared files uploaded by
// earlier checkpoints count in the full size only; for full snapshots they
// are equal.
type Sizes struct {
	Checkpointed int64
	Full         int64
}

// SizesOf sums the sizes of the state files and inline state of a
// checkpoint's acknowledged task states.
func SizesOf(states []checkpoint.TaskState) Sizes {
	var s Sizes
	both := func(n int64) {
		s.Checkpointed += n
		s.Full += n
	}
	for _, ts := range states {
		for _, os := range ts.Operators {
			if os.Keyed != nil {
				both(os.Keyed.File.Size)
			}
			if os.Channels != nil {
				both(os.Channels.File.Size)
			}
			if h := os.Incremental; h != nil {
				s.Checkpointed += h.UploadedSize
				s.Full += h.FullSize
			}
			for _, elems := range os.Operator {
				for _, e := range elems {
					both(int64(len(e)))
				}
			}
		}
	}
	return s
}

// CheckpointPersisted records the sizes of checkpoint id once its
// metadata is written: in its history entry and as the job's latest.
func (r *Recorder) CheckpointPersisted(id checkpoint.ID, sz Sizes) {
	r.LastCheckpointSize.Store(sz.Checkpointed)
	r.LastCheckpointFullSize.Store(sz.Full)
	r.updateCheckpoint(id, func(c *CheckpointStats) {
		c.CheckpointedSize, c.StateSize = sz.Checkpointed, sz.Full
	})
}
