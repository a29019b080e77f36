package runtime

import (
	"context"
	"maps"
	"testing"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/dataflow/dataflowtest"
)

// TestReactiveShape: reactive mode counts a job's parallelism over the
// operators the program did not pin; a pinned one is the least number of
// slots the job needs, and the smallest max parallelism of the unpinned
// ones bounds it. ParallelismAt moves only the unpinned ones. (Two
// unconnected sources: an edge across TaskManagers would need codecs.)
func TestReactiveShape(t *testing.T) {
	cases := []struct {
		name           string
		g              func() *dataflow.Graph
		p, pinned, max int
		at             int
		want           map[string]int
	}{
		{"unpinned", func() *dataflow.Graph {
			return dataflowtest.Graph(dataflowtest.Node("src", 2), dataflowtest.Node("agg", 2))
		}, 2, 1, 128, 5, map[string]int{"src": 5, "agg": 5}},
		{"pinned source, capped aggregate", func() *dataflow.Graph {
			src := dataflowtest.Node("src", 3)
			src.ExplicitParallelism = true
			agg := dataflowtest.Node("agg", 2)
			agg.MaxParallelism = 8
			return dataflowtest.Graph(src, agg)
		}, 2, 3, 8, 4, map[string]int{"src": 3, "agg": 4}},
		{"all pinned", func() *dataflow.Graph {
			src := dataflowtest.Node("src", 2)
			src.ExplicitParallelism = true
			return dataflowtest.Graph(src)
		}, 2, 2, 2, 2, map[string]int{"src": 2}},
	}
	for _, c := range cases {
		cfg := JobConfig{JobName: "j", CheckpointDir: t.TempDir(), NumRetained: 1}
		cj, err := NewClusterJob(context.Background(), c.g(), cfg, ClusterJobConfig{Slots: &fakeSlots{}})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p, pinned, maxp := cj.ReactiveShape()
		if p != c.p || pinned != c.pinned || maxp != c.max {
			t.Errorf("%s: shape %d, %d, %d; want %d, %d, %d", c.name, p, pinned, maxp, c.p, c.pinned, c.max)
		}
		byName := map[string]int{}
		for _, v := range cj.jm.jg.Vertices {
			for _, n := range v.Chain {
				byName[n.Name] = cj.ParallelismAt(c.at)[n.UID]
			}
		}
		if !maps.Equal(byName, c.want) {
			t.Errorf("%s: at %d: %v, want %v", c.name, c.at, byName, c.want)
		}
	}
}
