package failover

import (
	"cmp"

	"github.com/weirstream/weir/internal/checkpoint"
)

// CompareTaskID orders subtasks by vertex, then subtask index.
func CompareTaskID(a, b checkpoint.TaskID) int {
	if c := cmp.Compare(a.Vertex, b.Vertex); c != 0 {
		return c
	}
	return cmp.Compare(a.Subtask, b.Subtask)
}

// RegionIndex maps every subtask to the index of its region in regions.
func RegionIndex(regions [][]checkpoint.TaskID) map[checkpoint.TaskID]int {
	idx := map[checkpoint.TaskID]int{}
	for r, tasks := range regions {
		for _, t := range tasks {
			idx[t] = r
		}
	}
	return idx
}
