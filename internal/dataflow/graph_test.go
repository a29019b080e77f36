package dataflow_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/dataflow/dataflowtest"
)

// chains renders a job graph as "vertex;vertex" with each vertex's chain
// joined by "->", and its parallelism: "src->map/2;agg/2".
func chains(jg *dataflow.JobGraph) string {
	var vs []string
	for _, v := range jg.Vertices {
		var names []string
		for _, n := range v.Chain {
			names = append(names, n.Name)
		}
		vs = append(vs, strings.Join(names, "->")+"/"+strconv.Itoa(v.Parallelism))
	}
	return strings.Join(vs, ";")
}

func TestBuildJobGraphChaining(t *testing.T) {
	cases := []struct {
		name  string
		graph *dataflow.Graph
		want  string
	}{
		{"forward equal parallelism chains", dataflowtest.Graph(
			dataflowtest.Node("src", 2), dataflowtest.Node("map", 2, dataflowtest.Fwd(0)), dataflowtest.Node("sink", 2, dataflowtest.Fwd(1))),
			"src->map->sink/2"},
		{"hash edge breaks the chain", dataflowtest.Graph(
			dataflowtest.Node("src", 2), dataflowtest.Node("agg", 2, dataflowtest.Hash(0)), dataflowtest.Node("sink", 2, dataflowtest.Fwd(1))),
			"src/2;agg->sink/2"},
		{"rebalance edge breaks the chain", dataflowtest.Graph(
			dataflowtest.Node("src", 2), dataflowtest.Node("map", 2, dataflow.Edge{From: 0, Partition: dataflow.Rebalance})),
			"src/2;map/2"},
		{"broadcast edge breaks the chain", dataflowtest.Graph(
			dataflowtest.Node("src", 1), dataflowtest.Node("map", 1, dataflow.Edge{From: 0, Partition: dataflow.Broadcast})),
			"src/1;map/1"},
		{"different parallelism breaks the chain", dataflowtest.Graph(
			dataflowtest.Node("src", 1), dataflowtest.Node("map", 3, dataflowtest.Fwd(0)), dataflowtest.Node("sink", 3, dataflowtest.Fwd(1))),
			"src/1;map->sink/3"},
		{"a producer with two consumers ends its chain", dataflowtest.Graph(
			dataflowtest.Node("src", 2), dataflowtest.Node("a", 2, dataflowtest.Fwd(0)), dataflowtest.Node("b", 2, dataflowtest.Fwd(0))),
			"src/2;a/2;b/2"},
		{"a node with two inputs starts a chain", dataflowtest.Graph(
			dataflowtest.Node("s1", 2), dataflowtest.Node("s2", 2), dataflowtest.Node("union", 2, dataflowtest.Fwd(0), dataflowtest.Fwd(1)), dataflowtest.Node("sink", 2, dataflowtest.Fwd(2))),
			"s1/2;s2/2;union->sink/2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jg, err := dataflow.BuildJobGraph(c.graph, 128)
			if err != nil {
				t.Fatal(err)
			}
			if got := chains(jg); got != c.want {
				t.Errorf("chains = %s, want %s", got, c.want)
			}
		})
	}
}

func TestBuildJobGraphForwardBecomesRebalance(t *testing.T) {
	g := dataflowtest.Graph(dataflowtest.Node("src", 1), dataflowtest.Node("map", 3, dataflowtest.Fwd(0)))
	jg, err := dataflow.BuildJobGraph(g, 128)
	if err != nil {
		t.Fatal(err)
	}
	mapV := jg.Vertices[1]
	if got := mapV.Inputs[0].Edge.Partition; got != dataflow.Rebalance {
		t.Errorf("vertex input partition = %v, want rebalance", got)
	}
	if got := jg.Vertices[0].Outputs[0].Edge.Partition; got != dataflow.Rebalance {
		t.Errorf("producer output partition = %v, want rebalance", got)
	}
	if got := g.Nodes[1].Inputs[0].Partition; got != dataflow.Rebalance {
		t.Errorf("node input partition = %v, want rebalance", got)
	}
}

func TestBuildJobGraphWiring(t *testing.T) {
	g := dataflowtest.Graph(dataflowtest.Node("s1", 2), dataflowtest.Node("s2", 1), dataflowtest.Node("union", 2, dataflowtest.Fwd(0), dataflowtest.Fwd(1)), dataflowtest.Node("agg", 3, dataflowtest.Hash(2)))
	jg, err := dataflow.BuildJobGraph(g, 64)
	if err != nil {
		t.Fatal(err)
	}
	if got := chains(jg); got != "s1/2;s2/1;union/2;agg/3" {
		t.Fatalf("chains = %s", got)
	}
	if jg.MaxParallelism != 64 || g.Nodes[3].MaxParallelism != 64 {
		t.Errorf("max parallelism: job %d, node %d, want 64", jg.MaxParallelism, g.Nodes[3].MaxParallelism)
	}
	union := jg.Vertices[2]
	if len(union.Inputs) != 2 || union.Inputs[0].From != jg.Vertices[0] || union.Inputs[1].From != jg.Vertices[1] ||
		union.Inputs[0].Index != 0 || union.Inputs[1].Index != 1 {
		t.Errorf("union inputs = %+v", union.Inputs)
	}
	if got := union.Inputs[0].Edge.Partition; got != dataflow.Forward {
		t.Errorf("s1 -> union (equal parallelism) partition = %v, want forward", got)
	}
	if got := union.Inputs[1].Edge.Partition; got != dataflow.Rebalance {
		t.Errorf("s2 -> union (1 -> 2) partition = %v, want rebalance", got)
	}
	s2 := jg.Vertices[1]
	if len(s2.Outputs) != 1 || s2.Outputs[0].To != union || s2.Outputs[0].InputIndex != 1 || s2.Outputs[0].Node != g.Nodes[1] {
		t.Errorf("s2 outputs = %+v", s2.Outputs)
	}
	if !jg.Vertices[0].IsSource() || union.IsSource() {
		t.Error("IsSource wrong")
	}
	jg2, err := dataflow.BuildJobGraph(dataflowtest.Graph(dataflowtest.Node("src", 1), dataflowtest.Node("map", 1, dataflowtest.Fwd(0))), 128)
	if err != nil {
		t.Fatal(err)
	}
	if got := jg2.Vertices[0].Name(); got != "src -> map" {
		t.Errorf("vertex name = %q, want %q", got, "src -> map")
	}
}

func TestBuildJobGraphRejects(t *testing.T) {
	dupA, dupB := dataflowtest.Node("first", 1), dataflowtest.Node("second", 1, dataflowtest.Fwd(0))
	dupA.UID, dupB.UID = "same", "same"
	cases := []struct {
		name  string
		graph *dataflow.Graph
		want  []string
	}{
		{"duplicate uid", dataflowtest.Graph(dupA, dupB), []string{`"first"`, `"second"`, `"same"`, "unique"}},
		{"zero parallelism", dataflowtest.Graph(dataflowtest.Node("src", 0)), []string{`"src"`, "parallelism 0"}},
		{"parallelism above max parallelism", dataflowtest.Graph(dataflowtest.Node("src", 200)), []string{`"src"`, "200"}},
		{"unknown input", dataflowtest.Graph(dataflowtest.Node("src", 1), dataflowtest.Node("map", 1, dataflowtest.Fwd(5))), []string{`"map"`, "unknown operator 5"}},
		{"self input", dataflowtest.Graph(dataflowtest.Node("src", 1), dataflowtest.Node("map", 1, dataflowtest.Fwd(1))), []string{`"map"`, "unknown operator 1"}},
		{"hash edge without key", dataflowtest.Graph(dataflowtest.Node("src", 1), dataflowtest.Node("agg", 1, dataflow.Edge{From: 0, Partition: dataflow.Hash})), []string{`"agg"`, "without a key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := dataflow.BuildJobGraph(c.graph, 128)
			if err == nil {
				t.Fatal("dataflow.BuildJobGraph accepted the graph")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
