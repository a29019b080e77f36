package runtime

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/dataflow"
)

// TestInputsByChannel: a head whose inputs have different types gets each
// gate channel dispatched to its input's function, laid out as the gate
// lays out channels (input by input, a channel per producer subtask); a
// factory giving the wrong number of functions is an error naming the
// operator.
func TestInputsByChannel(t *testing.T) {
	a := &dataflow.Vertex{ID: 0, Chain: []*dataflow.Node{{Name: "a"}}, Parallelism: 2}
	b := &dataflow.Vertex{ID: 1, Chain: []*dataflow.Node{{Name: "b"}}, Parallelism: 3}
	input := func(i int) dataflow.InputFunc { return func(context.Context, any) (int, error) { return i, nil } }
	head := &dataflow.Node{Name: "join", InputsOf: func(dataflow.Operator) ([]dataflow.InputFunc, error) {
		return []dataflow.InputFunc{input(0), input(1)}, nil
	}}
	v := &dataflow.Vertex{ID: 2, Chain: []*dataflow.Node{head}, Parallelism: 1,
		Inputs: []dataflow.VertexInput{{From: a, Index: 0}, {From: b, Index: 1}}}
	fns, err := inputsByChannel(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, f := range fns {
		i, _ := f(context.Background(), nil)
		got = append(got, i)
	}
	if want := []int{0, 0, 1, 1, 1}; !slices.Equal(got, want) {
		t.Fatalf("channels dispatch to inputs %v, want %v", got, want)
	}
	head.InputsOf = func(dataflow.Operator) ([]dataflow.InputFunc, error) { return []dataflow.InputFunc{input(0)}, nil }
	if _, err := inputsByChannel(v, nil); err == nil || !strings.Contains(err.Error(), `operator "join": 1 input functions for 2 inputs`) {
		t.Fatalf("inputsByChannel = %v, want the count mismatch naming the operator", err)
	}
}
