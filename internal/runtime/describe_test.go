package runtime

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
)

// TestDescribe runs testdata/describe*.txt. Commands:
//
//	describe [maxp=N]   the input is a graph; prints Describe
//	compare [maxp=N]    the input is two graphs split by a line "---";
//	                    prints whether the fingerprints are equal and the
//	                    first differing line
//
// A graph is one node per line, in ID order:
//
//	NAME [p=N] [uid=S] [maxp=N] [out=TYPE] [<- PRODUCER:PARTITION ...]
//
// p defaults to 1, uid to NAME, out to none; partitions are forward, hash,
// rebalance, broadcast. Regenerate with: go test ./internal/runtime -run
// TestDescribe -rewrite
func TestDescribe(t *testing.T) {
	paths, err := filepath.Glob("testdata/describe*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range paths {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			maxp := 128
			d.MaybeScanArgs(t, "maxp", &maxp)
			switch d.Cmd {
			case "describe":
				return Describe(parseGraph(t, d.Input, maxp))
			case "compare":
				a, b, ok := strings.Cut(d.Input, "\n---\n")
				if !ok {
					d.Fatalf(t, "compare needs two graphs split by ---")
				}
				ga, gb := parseGraph(t, a, maxp), parseGraph(t, b, maxp)
				da, db := Describe(ga), Describe(gb)
				fa, fb := Fingerprint(ga), Fingerprint(gb)
				line, left, right := FirstDifference(da, db)
				if (fa == fb) != (line == 0) {
					t.Fatalf("fingerprints equal=%v but first difference at line %d", fa == fb, line)
				}
				if line == 0 {
					return "equal fingerprints"
				}
				return fmt.Sprintf("different fingerprints\nline %d\n- %s\n+ %s", line, orNone(left), orNone(right))
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	}
}

func orNone(line string) string {
	if line == "" {
		return "(no line)"
	}
	return line
}

// parseGraph builds a JobGraph from the test language above.
func parseGraph(t *testing.T, text string, maxp int) *dataflow.JobGraph {
	t.Helper()
	g := &dataflow.Graph{}
	ids := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		decl, inputs, _ := strings.Cut(line, "<-")
		fields := strings.Fields(decl)
		n := &dataflow.Node{Name: fields[0], UID: fields[0], Parallelism: 1}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			var err error
			switch k {
			case "p":
				n.Parallelism, err = strconv.Atoi(v)
			case "maxp":
				n.MaxParallelism, err = strconv.Atoi(v)
			case "uid":
				n.UID = v
			case "out":
				n.OutType = v
			default:
				err = fmt.Errorf("unknown key")
			}
			if err != nil {
				t.Fatalf("%q: %s: %v", line, f, err)
			}
		}
		for _, in := range strings.Fields(inputs) {
			from, part, _ := strings.Cut(in, ":")
			id, ok := ids[from]
			if !ok {
				t.Fatalf("%q: unknown producer %q", line, from)
			}
			e := dataflow.Edge{From: id, Partition: parsePartition(t, part)}
			if e.Partition == dataflow.Hash {
				e.KeyHash = func(int) uint32 { return 0 }
			}
			n.Inputs = append(n.Inputs, e)
		}
		ids[n.Name] = g.Add(n).ID
	}
	jg, err := dataflow.BuildJobGraph(g, maxp)
	if err != nil {
		t.Fatal(err)
	}
	return jg
}

func parsePartition(t *testing.T, s string) dataflow.Partition {
	for p := dataflow.Forward; p <= dataflow.Broadcast; p++ {
		if p.String() == s {
			return p
		}
	}
	t.Fatalf("unknown partitioning %q", s)
	return 0
}

// keyedJob builds, from fresh nodes each time as a builder would, a source
// chained with a map, keyed into a sum, rebalanced into a sink; change
// mutates the nodes before the graph is built.
func keyedJob(t *testing.T, maxp int, change func(nodes []*dataflow.Node)) *dataflow.JobGraph {
	t.Helper()
	key := func(checkpoint.TaskID) uint32 { return 0 }
	nodes := []*dataflow.Node{
		{Name: "src", UID: "src", Parallelism: 2, OutputFactories: dataflow.OutputFactories{OutType: reflect.TypeFor[int64]().String()}},
		{Name: "map", UID: "map", Parallelism: 2, OutputFactories: dataflow.OutputFactories{OutType: reflect.TypeFor[checkpoint.TaskID]().String()},
			Inputs: []dataflow.Edge{{From: 0, Partition: dataflow.Forward}}},
		{Name: "sum", UID: "sum", Parallelism: 3, OutputFactories: dataflow.OutputFactories{OutType: reflect.TypeFor[map[string]int]().String()},
			Inputs: []dataflow.Edge{{From: 1, Partition: dataflow.Hash, KeyHash: key}}},
		{Name: "sink", UID: "sink", Parallelism: 3,
			Inputs: []dataflow.Edge{{From: 2, Partition: dataflow.Rebalance}}},
	}
	if change != nil {
		change(nodes)
	}
	g := &dataflow.Graph{}
	for _, n := range nodes {
		g.Add(n)
	}
	jg, err := dataflow.BuildJobGraph(g, maxp)
	if err != nil {
		t.Fatal(err)
	}
	return jg
}

func TestFingerprintEqualForTwoBuilds(t *testing.T) {
	a, b := keyedJob(t, 128, nil), keyedJob(t, 128, nil)
	if a == b || a.Vertices[0] == b.Vertices[0] {
		t.Fatal("the two builds share objects; the test proves nothing")
	}
	if fa, fb := Fingerprint(a), Fingerprint(b); fa != fb {
		t.Fatalf("two builds of one job: fingerprints %x and %x differ:\n%s\n---\n%s", fa, fb, Describe(a), Describe(b))
	}
	if !strings.Contains(Describe(a), `out="checkpoint.TaskID"`) {
		t.Fatalf("record type missing from the description:\n%s", Describe(a))
	}
}

func TestFingerprintDiffers(t *testing.T) {
	base := Fingerprint(keyedJob(t, 128, nil))
	for _, tc := range []struct {
		name   string
		maxp   int
		change func(n []*dataflow.Node)
	}{
		{"parallelism of a chained node", 128, func(n []*dataflow.Node) { n[1].Parallelism = 3 }}, // also breaks the chain
		{"parallelism of the keyed operator", 128, func(n []*dataflow.Node) { n[2].Parallelism = 4 }},
		{"parallelism of the sink", 128, func(n []*dataflow.Node) { n[3].Parallelism = 2 }},
		{"uid", 128, func(n []*dataflow.Node) { n[2].UID = "sum-v2" }},
		{"name", 128, func(n []*dataflow.Node) { n[2].Name = "total" }},
		{"partitioning", 128, func(n []*dataflow.Node) { n[3].Inputs[0].Partition = dataflow.Broadcast }},
		{"hash instead of rebalance", 128, func(n []*dataflow.Node) {
			n[3].Inputs[0] = dataflow.Edge{From: 2, Partition: dataflow.Hash, KeyHash: func(map[string]int) uint32 { return 0 }}
		}},
		{"output type", 128, func(n []*dataflow.Node) { n[0].OutType = reflect.TypeFor[int32]().String() }},
		{"output type of the last chained node", 128, func(n []*dataflow.Node) { n[1].OutType = "string" }},
		{"operator max parallelism", 128, func(n []*dataflow.Node) { n[2].MaxParallelism = 256 }},
		{"job max parallelism", 256, nil},
		{"producer of an input", 128, func(n []*dataflow.Node) { n[3].Inputs[0].From = 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jg := keyedJob(t, tc.maxp, tc.change)
			if Fingerprint(jg) == base {
				t.Fatalf("fingerprint unchanged:\n%s", Describe(jg))
			}
			line, left, right := FirstDifference(Describe(keyedJob(t, 128, nil)), Describe(jg))
			if line == 0 || left == right {
				t.Fatalf("FirstDifference = %d %q %q", line, left, right)
			}
		})
	}
}

// TestDescribeQuotesNames checks that no user string breaks the
// one-fact-per-line shape: a name with a newline stays on its line.
func TestDescribeQuotesNames(t *testing.T) {
	jg := keyedJob(t, 128, func(n []*dataflow.Node) { n[2].Name = "sum\nvertex 9 \"x\" p=1" })
	for i, l := range descLines(Describe(jg)) {
		if !strings.HasPrefix(l, "vertex ") && !strings.HasPrefix(l, "max-parallelism ") {
			t.Fatalf("line %d %q: a name leaked out of its line", i+1, l)
		}
	}
	if got := strings.Count(Describe(jg), "\n"); got != strings.Count(Describe(keyedJob(t, 128, nil)), "\n") {
		t.Fatalf("renaming changed the line count to %d", got)
	}
}

func TestFirstDifference(t *testing.T) {
	for _, tc := range []struct {
		a, b        string
		line        int
		left, right string
	}{
		{"x\ny\n", "x\ny\n", 0, "", ""},
		{"", "", 0, "", ""},
		{"x\ny\n", "x\nz\n", 2, "y", "z"},
		{"x\n", "x\ny\n", 2, "", "y"},
		{"x\ny\n", "x\n", 2, "y", ""},
		{"", "a\n", 1, "", "a"},
		{"x\n", "x", 2, "", ""},
	} {
		line, left, right := FirstDifference(tc.a, tc.b)
		if line != tc.line || left != tc.left || right != tc.right {
			t.Errorf("FirstDifference(%q, %q) = %d %q %q, want %d %q %q", tc.a, tc.b, line, left, right, tc.line, tc.left, tc.right)
		}
	}
}

func TestGraphMismatch(t *testing.T) {
	jm := Describe(keyedJob(t, 128, nil))
	if err := GraphMismatch("demo", jm, jm); err != nil {
		t.Fatalf("equal descriptions: %v", err)
	}
	here := Describe(keyedJob(t, 128, func(n []*dataflow.Node) { n[2].Parallelism = 2 }))
	err := GraphMismatch("demo", jm, here)
	if err == nil || !IsUnrecoverable(err) {
		t.Fatalf("GraphMismatch = %v, want an unrecoverable error", err)
	}
	want := "job demo: this TaskManager built a different graph from the same arguments, line 5: " +
		"JobManager `vertex 1 \"sum\" p=3`, here `vertex 1 \"sum\" p=2`; run the same binary with the same arguments"
	if !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("message\n%s\nwant prefix\n%s", err, want)
	}
}
