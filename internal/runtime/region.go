package runtime

import (
	"cmp"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
)

// Regions returns the pipelined regions of jg, the unit of failover: each a
// list of subtasks sorted by TaskID (vertex, then subtask), regions ordered
// by their smallest TaskID, so the numbering is deterministic. Every
// subtask of every vertex is in exactly one region.
//
// Subtasks that exchange data are in one region, as in Flink's region
// failover for streaming jobs, so a failure restarts its region from the
// newest completed checkpoint while the others run on: no data flows
// between regions, so one restored to checkpoint N beside others past N is
// still consistent. Every edge between two vertices joins both vertices'
// subtasks into one region, a Forward edge too: its records go from
// subtask i to subtask i only, but the runtime gives every consumer a
// channel from every producer subtask (describeTasks, gateOffsets) and
// the producer sends its events (barriers, watermarks, end of partition)
// on all of them, so a producer restarted alone would meet consumers of
// another region on its channels, and they would wait for its events.
// (Flink's pointwise regions need pointwise gates; until the runtime has
// them, a Forward edge between vertices, which exists only where chaining
// stopped — two consumers, a side output — costs a larger region.)
// Subtasks of one vertex that exchange nothing stay apart.
//
// For source(2) -forward-> map(2) -hash-> sink(2) beside a(2), b(2) (a
// chained with b), with vertices numbered in that order, the regions are
// [0/0 0/1 1/0 1/1 2/0 2/1], [3/0] and [3/1].
//
// It reads only vertex IDs, parallelisms and the inputs' producers and
// partitioning.
func Regions(jg *dataflow.JobGraph) [][]checkpoint.TaskID {
	// Subtask (v, i) is node base[v]+i of the union-find forest. Keyed by
	// pointer, not ID, so a hand-made graph whose IDs are not positions
	// works too.
	base := map[*dataflow.Vertex]int{}
	n := 0
	for _, v := range jg.Vertices {
		base[v] = n
		n += v.Parallelism
	}
	uf := newUnionFind(n)
	for _, v := range jg.Vertices {
		for _, in := range v.Inputs {
			from := in.From
			// All-to-all: joining every subtask of both vertices to the
			// producer's first connects them all.
			for i := range from.Parallelism {
				uf.union(base[from], base[from]+i)
			}
			for i := range v.Parallelism {
				uf.union(base[from], base[v]+i)
			}
		}
	}
	regionOf := map[int]int{}
	var regions [][]checkpoint.TaskID
	for _, v := range jg.Vertices {
		for i := range v.Parallelism {
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
		slices.SortFunc(r, compareTaskID)
	}
	slices.SortFunc(regions, func(a, b []checkpoint.TaskID) int { return compareTaskID(a[0], b[0]) })
	return regions
}

func compareTaskID(a, b checkpoint.TaskID) int {
	if c := cmp.Compare(a.Vertex, b.Vertex); c != 0 {
		return c
	}
	return cmp.Compare(a.Subtask, b.Subtask)
}

// unionFind is a disjoint-set forest with path halving and union by size.
type unionFind struct {
	parent []int
	size   []int
}

func newUnionFind(n int) *unionFind {
	u := &unionFind{parent: make([]int, n), size: make([]int, n)}
	for i := range u.parent {
		u.parent[i] = i
		u.size[i] = 1
	}
	return u
}

func (u *unionFind) find(x int) int {
	for u.parent[x] != x {
		u.parent[x] = u.parent[u.parent[x]]
		x = u.parent[x]
	}
	return x
}

func (u *unionFind) union(a, b int) {
	a, b = u.find(a), u.find(b)
	if a == b {
		return
	}
	if u.size[a] < u.size[b] {
		a, b = b, a
	}
	u.parent[b] = a
	u.size[a] += u.size[b]
}
