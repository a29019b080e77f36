package failover

import (
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// tasks parses "v/i" pairs into TaskIDs; a malformed one is a bug in the
// test.
func tasks(ids ...string) []checkpoint.TaskID {
	out := make([]checkpoint.TaskID, len(ids))
	for k, s := range ids {
		t, err := coretest.ParseTask(s)
		if err != nil {
			panic(err)
		}
		out[k] = t
	}
	return out
}

func TestRegionIndex(t *testing.T) {
	idx := RegionIndex(walkthroughRegions())
	if len(idx) != 10 || idx[task(4, 1)] != 2 || idx[task(3, 0)] != 1 || idx[task(1, 0)] != 0 {
		t.Fatalf("RegionIndex = %v", idx)
	}
}
