package failover

import (
	"fmt"
	"strconv"
	"strings"
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

// parseTask parses one "v/i", strictly.
func parseTask(s string) checkpoint.TaskID {
	v, i, ok := strings.Cut(s, "/")
	vertex, err1 := strconv.Atoi(v)
	subtask, err2 := strconv.Atoi(i)
	if !ok || err1 != nil || err2 != nil {
		panic(fmt.Sprintf("task %q: want VERTEX/SUBTASK", s))
	}
	return checkpoint.TaskID{Vertex: vertex, Subtask: subtask}
}

func TestRegionIndex(t *testing.T) {
	idx := RegionIndex(walkthroughRegions())
	if len(idx) != 10 || idx[task(4, 1)] != 2 || idx[task(3, 0)] != 1 || idx[task(1, 0)] != 0 {
		t.Fatalf("RegionIndex = %v", idx)
	}
}
