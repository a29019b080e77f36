package runtime

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
)

// graph builds a JobGraph from parallelisms and edges, the way
// BuildJobGraph links vertices, without operators.
func regionGraph(par []int, edges ...regionEdge) *dataflow.JobGraph {
	jg := &dataflow.JobGraph{MaxParallelism: 128}
	for i, p := range par {
		jg.Vertices = append(jg.Vertices, &dataflow.Vertex{ID: i, Parallelism: p})
	}
	for _, e := range edges {
		from, to := jg.Vertices[e.from], jg.Vertices[e.to]
		re := dataflow.Edge{From: e.from, Partition: e.p}
		to.Inputs = append(to.Inputs, dataflow.VertexInput{From: from, Edge: re, Index: len(to.Inputs)})
		from.Outputs = append(from.Outputs, dataflow.VertexOutput{To: to, Edge: re, InputIndex: len(to.Inputs) - 1})
	}
	return jg
}

type regionEdge struct {
	from, to int
	p        dataflow.Partition
}

// tasks parses "v/i" pairs into TaskIDs.
func taskIDs(ids ...string) []checkpoint.TaskID {
	out := make([]checkpoint.TaskID, len(ids))
	for k, s := range ids {
		if _, err := fmt.Sscanf(s, "%d/%d", &out[k].Vertex, &out[k].Subtask); err != nil {
			panic(err)
		}
	}
	return out
}

func TestRegions(t *testing.T) {
	for _, tc := range []struct {
		name string
		jg   *dataflow.JobGraph
		want [][]checkpoint.TaskID
	}{
		{
			// The runtime connects every subtask of a forward edge's vertices
			// (gates hold a channel from every producer), so they fail over
			// together.
			name: "forward only: one region",
			jg:   regionGraph([]int{3, 3, 3}, regionEdge{0, 1, dataflow.Forward}, regionEdge{1, 2, dataflow.Forward}),
			want: [][]checkpoint.TaskID{
				taskIDs("0/0", "0/1", "0/2", "1/0", "1/1", "1/2", "2/0", "2/1", "2/2"),
			},
		},
		{
			name: "keyed: one region",
			jg:   regionGraph([]int{2, 2, 3}, regionEdge{0, 1, dataflow.Forward}, regionEdge{1, 2, dataflow.Hash}),
			want: [][]checkpoint.TaskID{taskIDs("0/0", "0/1", "1/0", "1/1", "2/0", "2/1", "2/2")},
		},
		{
			name: "two independent keyed pipelines",
			jg:   regionGraph([]int{2, 2, 1, 2}, regionEdge{0, 1, dataflow.Hash}, regionEdge{2, 3, dataflow.Rebalance}),
			want: [][]checkpoint.TaskID{taskIDs("0/0", "0/1", "1/0", "1/1"), taskIDs("2/0", "3/0", "3/1")},
		},
		{
			name: "keyed pipeline beside a forward pipeline",
			jg: regionGraph([]int{2, 2, 2, 2, 2},
				regionEdge{0, 1, dataflow.Forward}, regionEdge{1, 2, dataflow.Hash}, regionEdge{3, 4, dataflow.Forward}),
			want: [][]checkpoint.TaskID{
				taskIDs("0/0", "0/1", "1/0", "1/1", "2/0", "2/1"), taskIDs("3/0", "3/1", "4/0", "4/1"),
			},
		},
		{
			name: "forward between unequal parallelisms is all-to-all",
			jg:   regionGraph([]int{2, 3}, regionEdge{0, 1, dataflow.Forward}),
			want: [][]checkpoint.TaskID{taskIDs("0/0", "0/1", "1/0", "1/1", "1/2")},
		},
		{
			name: "broadcast joins, and so does a union of forward inputs",
			jg: regionGraph([]int{2, 2, 2, 1, 1},
				regionEdge{0, 2, dataflow.Forward}, regionEdge{1, 2, dataflow.Forward}, regionEdge{3, 4, dataflow.Broadcast}),
			want: [][]checkpoint.TaskID{
				taskIDs("0/0", "0/1", "1/0", "1/1", "2/0", "2/1"), taskIDs("3/0", "4/0"),
			},
		},
		{
			name: "a keyed edge into one branch joins all of a forward diamond",
			jg: regionGraph([]int{2, 2, 2, 2},
				regionEdge{0, 1, dataflow.Forward}, regionEdge{0, 2, dataflow.Hash}, regionEdge{1, 3, dataflow.Forward}, regionEdge{2, 3, dataflow.Forward}),
			want: [][]checkpoint.TaskID{taskIDs("0/0", "0/1", "1/0", "1/1", "2/0", "2/1", "3/0", "3/1")},
		},
		{
			name: "a lone source",
			jg:   regionGraph([]int{2}),
			want: [][]checkpoint.TaskID{taskIDs("0/0"), taskIDs("0/1")},
		},
		{
			name: "empty graph",
			jg:   regionGraph(nil),
			want: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Regions(tc.jg)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Regions =\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// TestRegionsOfBuiltGraph runs on BuildJobGraph's output: a source chained
// with a map, keyed into a sink, beside an unchained forward pipeline.
func TestRegionsOfBuiltGraph(t *testing.T) {
	g := &dataflow.Graph{}
	key := func(int64) uint32 { return 0 }
	src := g.Add(&dataflow.Node{Name: "src", UID: "src", Parallelism: 2})
	m := g.Add(&dataflow.Node{Name: "map", UID: "map", Parallelism: 2, Inputs: []dataflow.Edge{{From: src.ID}}})
	g.Add(&dataflow.Node{Name: "sum", UID: "sum", Parallelism: 2,
		Inputs: []dataflow.Edge{{From: m.ID, Partition: dataflow.Hash, KeyHash: key}}})
	a := g.Add(&dataflow.Node{Name: "a", UID: "a", Parallelism: 2})
	g.Add(&dataflow.Node{Name: "b", UID: "b", Parallelism: 2, Inputs: []dataflow.Edge{{From: a.ID}}})
	g.Add(&dataflow.Node{Name: "c", UID: "c", Parallelism: 2, Inputs: []dataflow.Edge{{From: a.ID}}})
	jg, err := dataflow.BuildJobGraph(g, 128)
	if err != nil {
		t.Fatal(err)
	}
	// Vertices: 0 src->map, 1 sum, 2 a, 3 b, 4 c (a has two consumers, so
	// neither is chained, and the forward edges join a, b and c).
	want := [][]checkpoint.TaskID{
		taskIDs("0/0", "0/1", "1/0", "1/1"), taskIDs("2/0", "2/1", "3/0", "3/1", "4/0", "4/1"),
	}
	if got := Regions(jg); !reflect.DeepEqual(got, want) {
		t.Fatalf("Regions =\n%v\nwant\n%v", got, want)
	}
}

// naiveRegions lists every subtask-to-subtask connection explicitly and
// floods from each unvisited subtask in TaskID order.
func naiveRegionsOf(par []int, edges []regionEdge) [][]checkpoint.TaskID {
	adj := map[checkpoint.TaskID][]checkpoint.TaskID{}
	link := func(a, b checkpoint.TaskID) {
		adj[a] = append(adj[a], b)
		adj[b] = append(adj[b], a)
	}
	for _, e := range edges {
		for i := 0; i < par[e.from]; i++ {
			for j := 0; j < par[e.to]; j++ {
				link(checkpoint.TaskID{Vertex: e.from, Subtask: i}, checkpoint.TaskID{Vertex: e.to, Subtask: j})
			}
		}
	}
	seen := map[checkpoint.TaskID]bool{}
	var regions [][]checkpoint.TaskID
	for v, p := range par {
		for i := 0; i < p; i++ {
			start := checkpoint.TaskID{Vertex: v, Subtask: i}
			if seen[start] {
				continue
			}
			seen[start] = true
			region := []checkpoint.TaskID{start}
			for k := 0; k < len(region); k++ {
				for _, n := range adj[region[k]] {
					if !seen[n] {
						seen[n] = true
						region = append(region, n)
					}
				}
			}
			slices.SortFunc(region, compareTaskID)
			regions = append(regions, region)
		}
	}
	return regions
}

func TestRegionsMatchNaiveModel(t *testing.T) {
	const seed = 3
	rng := rand.New(rand.NewSource(seed))
	parts := []dataflow.Partition{dataflow.Forward, dataflow.Forward, dataflow.Forward, dataflow.Hash, dataflow.Rebalance, dataflow.Broadcast}
	sizes := map[int]int{}
	for run := 0; run < 2000; run++ {
		n := rng.Intn(8)
		par := make([]int, n)
		for i := range par {
			par[i] = 1 + rng.Intn(4)
		}
		var edges []regionEdge
		for to := 1; to < n; to++ {
			for k := rng.Intn(3); k > 0; k-- {
				edges = append(edges, regionEdge{rng.Intn(to), to, parts[rng.Intn(len(parts))]})
			}
		}
		got := Regions(regionGraph(par, edges...))
		want := naiveRegionsOf(par, edges)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d run %d: par %v edges %v:\nRegions = %v\nnaive   = %v", seed, run, par, edges, got, want)
		}
		sizes[min(len(got), 3)]++
	}
	// The generator must exercise one, two and many regions.
	for k := 1; k <= 3; k++ {
		if sizes[k] < 100 {
			t.Fatalf("only %d graphs with %d regions (3 = more): generator too narrow: %v", sizes[k], k, sizes)
		}
	}
}
