package failover

import (
	"cmp"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/runtime"
)

// Regions returns the pipelined regions of jg: each a list of subtasks
// sorted by TaskID, regions ordered by their smallest TaskID. Every subtask
// of every vertex is in exactly one region. It reads only vertex IDs,
// parallelisms and the inputs' producers and partitioning.
func Regions(jg *runtime.JobGraph) [][]checkpoint.TaskID {
	// Subtask (v, i) is node base[v]+i of the union-find forest.
	// Keyed by pointer, not ID, so a hand-made graph whose IDs are not
	// positions works too.
	base := map[*runtime.Vertex]int{}
	n := 0
	for _, v := range jg.Vertices {
		base[v] = n
		n += v.Parallelism
	}
	uf := newUnionFind(n)
	for _, v := range jg.Vertices {
		for _, in := range v.Inputs {
			from := in.From
			if in.Edge.Partition == runtime.Forward && from.Parallelism == v.Parallelism {
				for i := 0; i < v.Parallelism; i++ {
					uf.union(base[from]+i, base[v]+i)
				}
				continue
			}
			// All-to-all: chaining every subtask of both vertices to the
			// first of the producer connects them all.
			for i := 0; i < from.Parallelism; i++ {
				uf.union(base[from], base[from]+i)
			}
			for i := 0; i < v.Parallelism; i++ {
				uf.union(base[from], base[v]+i)
			}
		}
	}
	// Subtasks are visited in TaskID order, so each region is created at
	// its smallest TaskID and filled in order.
	regionOf := map[int]int{}
	var regions [][]checkpoint.TaskID
	for _, v := range jg.Vertices {
		for i := 0; i < v.Parallelism; i++ {
			root := uf.find(base[v] + i)
			r, ok := regionOf[root]
			if !ok {
				r = len(regions)
				regionOf[root] = r
				regions = append(regions, nil)
			}
			regions[r] = append(regions[r], checkpoint.TaskID{Vertex: v.ID, Subtask: i})
		}
	}
	// Vertices are listed by ID in a built graph; sorting keeps the
	// promise for a hand-made one whose order differs.
	for _, r := range regions {
		slices.SortFunc(r, CompareTaskID)
	}
	slices.SortFunc(regions, func(a, b []checkpoint.TaskID) int { return CompareTaskID(a[0], b[0]) })
	return regions
}

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
