package failover

import (
	"fmt"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

// tasks parses "v/i" pairs into TaskIDs.
func tasks(ids ...string) []checkpoint.TaskID {
	out := make([]checkpoint.TaskID, len(ids))
	for k, s := range ids {
		out[k] = parseTask(s)
	}
	return out
}

func parseTask(s string) checkpoint.TaskID {
	var t checkpoint.TaskID
	if _, err := fmt.Sscanf(s, "%d/%d", &t.Vertex, &t.Subtask); err != nil {
		panic(fmt.Sprintf("task %q: %v", s, err))
	}
	return t
}

func TestRegionIndex(t *testing.T) {
	idx := RegionIndex(walkthroughRegions())
	if len(idx) != 10 || idx[task(4, 1)] != 2 || idx[task(3, 0)] != 1 || idx[task(1, 0)] != 0 {
		t.Fatalf("RegionIndex = %v", idx)
	}
}
