package runtime

import (
	"context"
	"reflect"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/keygroup"
)

// Union state reaches every subtask whole, at the same and at another
// parallelism, while ordinary list state next to it keeps its rules.
func TestForOperatorUnionState(t *testing.T) {
	u := UnionStatePrefix + "partitions"
	rp := &restorePoint{md: &checkpoint.Metadata{ID: 3, Operators: []checkpoint.OperatorState{{
		UID: "kafka", Parallelism: 2, MaxParallelism: 128,
		Subtasks: []checkpoint.SubtaskStateEntry{
			{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "kafka", Operator: map[string][][]byte{u: elems("p0", "p2"), "plain": elems("x0")}}},
			{Subtask: 1, State: checkpoint.OperatorSubtaskState{UID: "kafka", Operator: map[string][][]byte{u: elems("p1", "p3"), "plain": elems("x1")}}},
		},
	}}}}
	for _, p := range []int{1, 2, 3} {
		for s := 0; s < p; s++ {
			rs, err := rp.forOperator(context.Background(), "kafka", s, p, keygroup.RangeFor(128, p, s))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strs(rs.Operator[u]), []string{"p0", "p2", "p1", "p3"}; !reflect.DeepEqual(got, want) {
				t.Errorf("p=%d subtask %d: union %v, want %v", p, s, got, want)
			}
			var wantPlain []string
			switch {
			case p == 2:
				wantPlain = []string{[]string{"x0", "x1"}[s]}
			case p == 1:
				wantPlain = []string{"x0", "x1"}
			case s < 2:
				wantPlain = []string{[]string{"x0", "x1"}[s]}
			}
			if got := strs(rs.Operator["plain"]); !reflect.DeepEqual(got, wantPlain) {
				t.Errorf("p=%d subtask %d: plain %v, want %v", p, s, got, wantPlain)
			}
		}
	}
}

// Broadcast state is stored by one subtask and reaches every subtask as
// that one copy, at the same and at another parallelism; a checkpoint
// holding a copy per subtask restores one of them, not their union.
func TestForOperatorBroadcastState(t *testing.T) {
	b := BroadcastStatePrefix + "rules"
	for _, c := range []struct {
		name string
		subs []checkpoint.SubtaskStateEntry
	}{
		{"once", []checkpoint.SubtaskStateEntry{
			{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "rules", Operator: map[string][][]byte{b: elems("r1", "r2")}}},
			{Subtask: 1, State: checkpoint.OperatorSubtaskState{UID: "rules", Operator: map[string][][]byte{b: nil}}},
		}},
		{"per subtask", []checkpoint.SubtaskStateEntry{
			{Subtask: 1, State: checkpoint.OperatorSubtaskState{UID: "rules", Operator: map[string][][]byte{b: elems("r1", "r2")}}},
			{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "rules", Operator: map[string][][]byte{b: elems("r1", "r2")}}},
		}},
	} {
		rp := &restorePoint{md: &checkpoint.Metadata{ID: 3, Operators: []checkpoint.OperatorState{{
			UID: "rules", Parallelism: 2, MaxParallelism: 128, Subtasks: c.subs,
		}}}}
		for _, p := range []int{1, 2, 3} {
			for s := 0; s < p; s++ {
				rs, err := rp.forOperator(context.Background(), "rules", s, p, keygroup.RangeFor(128, p, s))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := strs(rs.Operator[b]), []string{"r1", "r2"}; !reflect.DeepEqual(got, want) {
					t.Errorf("%s: p=%d subtask %d: broadcast %v, want %v", c.name, p, s, got, want)
				}
			}
		}
	}
}
