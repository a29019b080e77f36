package runtime

import (
	"strconv"
	"strings"
	"testing"
)

// graphOf builds a logical graph from node specs; only the fields
// BuildJobGraph reads are set.
func graphOf(nodes ...*Node) *Graph {
	g := &Graph{}
	for _, n := range nodes {
		if n.UID == "" {
			n.UID = n.Name
		}
		g.Add(n)
	}
	return g
}

func node(name string, p int, inputs ...Edge) *Node {
	return &Node{Name: name, Parallelism: p, Inputs: inputs}
}

func fwd(from int) Edge { return Edge{From: from, Partition: Forward} }

func hash(from int) Edge {
	return Edge{From: from, Partition: Hash, KeyHash: func(int) uint32 { return 0 }}
}

// chains renders a job graph as "vertex;vertex" with each vertex's chain
// joined by "->", and its parallelism: "src->map/2;agg/2".
func chains(jg *JobGraph) string {
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
		graph *Graph
		want  string
	}{
		{"forward equal parallelism chains", graphOf(
			node("src", 2), node("map", 2, fwd(0)), node("sink", 2, fwd(1))),
			"src->map->sink/2"},
		{"hash edge breaks the chain", graphOf(
			node("src", 2), node("agg", 2, hash(0)), node("sink", 2, fwd(1))),
			"src/2;agg->sink/2"},
		{"rebalance edge breaks the chain", graphOf(
			node("src", 2), node("map", 2, Edge{From: 0, Partition: Rebalance})),
			"src/2;map/2"},
		{"broadcast edge breaks the chain", graphOf(
			node("src", 1), node("map", 1, Edge{From: 0, Partition: Broadcast})),
			"src/1;map/1"},
		{"different parallelism breaks the chain", graphOf(
			node("src", 1), node("map", 3, fwd(0)), node("sink", 3, fwd(1))),
			"src/1;map->sink/3"},
		{"a producer with two consumers ends its chain", graphOf(
			node("src", 2), node("a", 2, fwd(0)), node("b", 2, fwd(0))),
			"src/2;a/2;b/2"},
		{"a node with two inputs starts a chain", graphOf(
			node("s1", 2), node("s2", 2), node("union", 2, fwd(0), fwd(1)), node("sink", 2, fwd(2))),
			"s1/2;s2/2;union->sink/2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jg, err := BuildJobGraph(c.graph, 128)
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
	g := graphOf(node("src", 1), node("map", 3, fwd(0)))
	jg, err := BuildJobGraph(g, 128)
	if err != nil {
		t.Fatal(err)
	}
	mapV := jg.Vertices[1]
	if got := mapV.Inputs[0].Edge.Partition; got != Rebalance {
		t.Errorf("vertex input partition = %v, want rebalance", got)
	}
	if got := jg.Vertices[0].Outputs[0].Edge.Partition; got != Rebalance {
		t.Errorf("producer output partition = %v, want rebalance", got)
	}
	if got := g.Nodes[1].Inputs[0].Partition; got != Rebalance {
		t.Errorf("node input partition = %v, want rebalance", got)
	}
}

func TestBuildJobGraphWiring(t *testing.T) {
	g := graphOf(node("s1", 2), node("s2", 1), node("union", 2, fwd(0), fwd(1)), node("agg", 3, hash(2)))
	jg, err := BuildJobGraph(g, 64)
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
	if got := union.Inputs[0].Edge.Partition; got != Forward {
		t.Errorf("s1 -> union (equal parallelism) partition = %v, want forward", got)
	}
	if got := union.Inputs[1].Edge.Partition; got != Rebalance {
		t.Errorf("s2 -> union (1 -> 2) partition = %v, want rebalance", got)
	}
	s2 := jg.Vertices[1]
	if len(s2.Outputs) != 1 || s2.Outputs[0].To != union || s2.Outputs[0].InputIndex != 1 || s2.Outputs[0].Node != g.Nodes[1] {
		t.Errorf("s2 outputs = %+v", s2.Outputs)
	}
	if !jg.Vertices[0].IsSource() || union.IsSource() {
		t.Error("IsSource wrong")
	}
	jg2, err := BuildJobGraph(graphOf(node("src", 1), node("map", 1, fwd(0))), 128)
	if err != nil {
		t.Fatal(err)
	}
	if got := jg2.Vertices[0].Name(); got != "src -> map" {
		t.Errorf("vertex name = %q, want %q", got, "src -> map")
	}
}

func TestBuildJobGraphRejects(t *testing.T) {
	dupA, dupB := node("first", 1), node("second", 1, fwd(0))
	dupA.UID, dupB.UID = "same", "same"
	cases := []struct {
		name  string
		graph *Graph
		want  []string
	}{
		{"duplicate uid", graphOf(dupA, dupB), []string{`"first"`, `"second"`, `"same"`, "unique"}},
		{"zero parallelism", graphOf(node("src", 0)), []string{`"src"`, "parallelism 0"}},
		{"parallelism above max parallelism", graphOf(node("src", 200)), []string{`"src"`, "200"}},
		{"unknown input", graphOf(node("src", 1), node("map", 1, fwd(5))), []string{`"map"`, "unknown operator 5"}},
		{"self input", graphOf(node("src", 1), node("map", 1, fwd(1))), []string{`"map"`, "unknown operator 1"}},
		{"hash edge without key", graphOf(node("src", 1), node("agg", 1, Edge{From: 0, Partition: Hash})), []string{`"agg"`, "without a key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := BuildJobGraph(c.graph, 128)
			if err == nil {
				t.Fatal("BuildJobGraph accepted the graph")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
