package jobstatus

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// An incremental handle counts its uploads as checkpointed and all its
// files as full size; everything else (keyed and channel-state files,
// inline operator state) counts in both.
func TestSizesOf(t *testing.T) {
	states := []checkpoint.TaskState{
		{Operators: []checkpoint.OperatorSubtaskState{
			{UID: "agg", Incremental: &checkpoint.IncrementalKeyedStateHandle{FullSize: 1000, UploadedSize: 70}, Operator: map[string][][]byte{"l": {[]byte("abc")}}},
		}},
		{Operators: []checkpoint.OperatorSubtaskState{
			{UID: "agg", Keyed: &checkpoint.KeyedStateHandle{File: checkpoint.StateFile{Size: 200}}},
			{UID: "sink", Channels: &checkpoint.ChannelStateHandle{File: checkpoint.StateFile{Size: 30}}},
		}},
	}
	if got, want := SizesOf(states), (Sizes{Checkpointed: 70 + 3 + 200 + 30, Full: 1000 + 3 + 200 + 30}); got != want {
		t.Fatalf("SizesOf = %+v, want %+v", got, want)
	}
	var st JobStatus
	s := RecorderOf(&st)
	s.CheckpointTriggered(4, checkpoint.Periodic, time.Unix(0, 0))
	s.CheckpointPersisted(4, Sizes{Checkpointed: 5, Full: 9})
	if h := st.Checkpoints(time.Unix(1, 0)); len(h) != 1 || h[0].CheckpointedSize != 5 || h[0].StateSize != 9 {
		t.Fatalf("history %+v, want checkpoint 4 with sizes 5 and 9", h)
	}
	if s.LastCheckpointSize.Load() != 5 || s.LastCheckpointFullSize.Load() != 9 {
		t.Fatalf("last sizes %d, %d; want 5, 9", s.LastCheckpointSize.Load(), s.LastCheckpointFullSize.Load())
	}
}
