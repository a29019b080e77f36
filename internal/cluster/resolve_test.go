package cluster

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
)

// A rescaled spec's parallelism goes onto the builder's graph by uid; a
// uid the builder no longer makes is refused, naming the way out.
func TestApplyParallelism(t *testing.T) {
	graph := func() *dataflow.Graph {
		return &dataflow.Graph{Nodes: []*dataflow.Node{{UID: "src", Parallelism: 2}, {UID: "sum", Parallelism: 2}}}
	}
	g := graph()
	if err := applyParallelism(deployment.JobSpec{Name: "j"}, g); err != nil || g.Nodes[1].Parallelism != 2 {
		t.Fatalf("no rescale: %v, %+v", err, g.Nodes[1])
	}
	if err := applyParallelism(deployment.JobSpec{Name: "j", Parallelism: map[string]int{"src": 1, "sum": 5}}, g); err != nil || g.Nodes[0].Parallelism != 1 || g.Nodes[1].Parallelism != 5 {
		t.Fatalf("rescaled: %v, %+v %+v", err, g.Nodes[0], g.Nodes[1])
	}
	err := applyParallelism(deployment.JobSpec{Name: "j", Kind: "demo", Parallelism: map[string]int{"gone": 3}}, graph())
	if err == nil || !strings.Contains(err.Error(), "the binary the job was rescaled with") {
		t.Fatalf("unknown uid: %v", err)
	}
}
