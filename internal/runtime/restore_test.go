package runtime

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/dataflow/dataflowtest"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

func elems(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func strs(bs [][]byte) []string {
	var out []string
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}

// TestForOperatorOperatorStateSameParallelism: each subtask gets its own
// old subtask's lists unchanged.
func TestForOperatorOperatorStateSameParallelism(t *testing.T) {
	rp := &restorePoint{md: &checkpoint.Metadata{ID: 7, Operators: []checkpoint.OperatorState{{
		UID: "src", Parallelism: 2, MaxParallelism: 128,
		Subtasks: []checkpoint.SubtaskStateEntry{
			{Subtask: 1, State: checkpoint.OperatorSubtaskState{UID: "src", Operator: map[string][][]byte{"offsets": elems("b0")}}},
			{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "src", Operator: map[string][][]byte{"offsets": elems("a0", "a1")}}},
		},
	}}}}
	for s, want := range [][]string{{"a0", "a1"}, {"b0"}} {
		rs, err := rp.forOperator(context.Background(), "src", s, 2, keygroup.RangeFor(128, 2, s))
		if err != nil {
			t.Fatal(err)
		}
		if rs.Checkpoint != 7 {
			t.Errorf("subtask %d: checkpoint %d, want 7", s, rs.Checkpoint)
		}
		if got := strs(rs.Operator["offsets"]); !reflect.DeepEqual(got, want) {
			t.Errorf("subtask %d: offsets %v, want %v", s, got, want)
		}
	}
}

// TestForOperatorOperatorStateRedistribution: on a change of parallelism
// every list's elements, old subtask by old subtask in order, are dealt
// round-robin over the new subtasks; none is lost or duplicated.
func TestForOperatorOperatorStateRedistribution(t *testing.T) {
	md := &checkpoint.Metadata{ID: 3, Operators: []checkpoint.OperatorState{{
		UID: "op", Parallelism: 2, MaxParallelism: 128,
		Subtasks: []checkpoint.SubtaskStateEntry{
			{Subtask: 1, State: checkpoint.OperatorSubtaskState{Operator: map[string][][]byte{"offsets": elems("b0", "b1")}}},
			{Subtask: 0, State: checkpoint.OperatorSubtaskState{Operator: map[string][][]byte{
				"offsets": elems("a0", "a1", "a2"), "other": elems("x"),
			}}},
		},
	}}}
	rp := &restorePoint{md: md}
	cases := []struct {
		parallelism int
		want        []map[string][]string
	}{
		{3, []map[string][]string{
			{"offsets": {"a0", "b0"}, "other": {"x"}},
			{"offsets": {"a1", "b1"}},
			{"offsets": {"a2"}},
		}},
		{1, []map[string][]string{
			{"offsets": {"a0", "a1", "a2", "b0", "b1"}, "other": {"x"}},
		}},
		{6, []map[string][]string{
			{"offsets": {"a0"}, "other": {"x"}}, {"offsets": {"a1"}}, {"offsets": {"a2"}},
			{"offsets": {"b0"}}, {"offsets": {"b1"}}, {},
		}},
	}
	for _, c := range cases {
		for s, want := range c.want {
			rs, err := rp.forOperator(context.Background(), "op", s, c.parallelism, keygroup.RangeFor(128, c.parallelism, s))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for name, es := range rs.Operator {
				got[name] = strs(es)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("parallelism %d subtask %d: %v, want %v", c.parallelism, s, got, want)
			}
		}
	}
}

func TestForOperatorWithoutState(t *testing.T) {
	var none *restorePoint
	if rs, err := none.forOperator(context.Background(), "x", 0, 1, keygroup.RangeFor(128, 1, 0)); rs != nil || err != nil {
		t.Errorf("nil restore point: %v, %v; want nil, nil", rs, err)
	}
	rp := &restorePoint{md: &checkpoint.Metadata{ID: 4}}
	rs, err := rp.forOperator(context.Background(), "new-operator", 0, 1, keygroup.RangeFor(128, 1, 0))
	if rs != nil || err != nil {
		t.Errorf("operator absent from the checkpoint: %+v, %v; want nil, nil (it starts fresh)", rs, err)
	}
}

// keyedCheckpoint writes one keyed state file per old subtask, each block
// being the text "kg<N>;", and returns the restore point.
func keyedCheckpoint(t *testing.T, maxP, oldP int) (*restorePoint, *storage.FS) {
	t.Helper()
	fs, err := storage.Open(t.TempDir(), "job")
	if err != nil {
		t.Fatal(err)
	}
	op := checkpoint.OperatorState{UID: "agg", Parallelism: oldP, MaxParallelism: maxP}
	for s := 0; s < oldP; s++ {
		r := keygroup.RangeFor(maxP, oldP, s)
		var offs []checkpoint.KeyGroupOffset
		f, err := fs.WriteFile(context.Background(), 9, fmt.Sprintf("agg-%d.keyed", s), func(w io.Writer) error {
			var off int64
			for kg := r.Start; kg < r.End; kg++ {
				b := fmt.Sprintf("kg%d;", kg)
				offs = append(offs, checkpoint.KeyGroupOffset{KeyGroup: kg, Offset: off, Length: int64(len(b))})
				off += int64(len(b))
				if _, err := io.WriteString(w, b); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		op.Subtasks = append(op.Subtasks, checkpoint.SubtaskStateEntry{Subtask: s, State: checkpoint.OperatorSubtaskState{
			UID: "agg", Keyed: &checkpoint.KeyedStateHandle{File: f, KeyGroups: offs},
		}})
	}
	md := &checkpoint.Metadata{ID: 9, Operators: []checkpoint.OperatorState{op}}
	return &restorePoint{md: md, fs: fs, path: "chk-9"}, fs
}

// TestForOperatorKeyedRescale: every new subtask receives exactly the key
// groups of its range, each from the old subtask that wrote it, with that
// file's bytes; over all new subtasks every key group arrives exactly once.
func TestForOperatorKeyedRescale(t *testing.T) {
	const maxP = 16
	for _, c := range []struct{ oldP, newP int }{{2, 3}, {3, 2}, {4, 1}, {1, 4}, {2, 2}} {
		t.Run(fmt.Sprintf("%d->%d", c.oldP, c.newP), func(t *testing.T) {
			rp, _ := keyedCheckpoint(t, maxP, c.oldP)
			seen := make([]int, maxP)
			for s := 0; s < c.newP; s++ {
				kgs := keygroup.RangeFor(maxP, c.newP, s)
				rs, err := rp.forOperator(context.Background(), "agg", s, c.newP, kgs)
				if err != nil {
					t.Fatal(err)
				}
				for _, src := range rs.Keyed {
					if len(src.KeyGroups) == 0 {
						t.Errorf("subtask %d got a source without key groups", s)
					}
					for _, kg := range src.KeyGroups {
						if !kgs.Contains(kg.KeyGroup) {
							t.Errorf("subtask %d (%v) got key group %d", s, kgs, kg.KeyGroup)
						}
					}
					err := state.ForEachBlock(context.Background(), []state.RestoreSource{src}, kgs, func(kg int, blk []byte) error {
						seen[kg]++
						if want := fmt.Sprintf("kg%d;", kg); string(blk) != want {
							t.Errorf("subtask %d key group %d: block %q, want %q", s, kg, blk, want)
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				// Sources come from distinct old files, in old-subtask order.
				for i := 1; i < len(rs.Keyed); i++ {
					if rs.Keyed[i-1].KeyGroups[0].KeyGroup >= rs.Keyed[i].KeyGroups[0].KeyGroup {
						t.Errorf("subtask %d: sources out of order", s)
					}
				}
			}
			for kg, n := range seen {
				if n != 1 {
					t.Errorf("key group %d restored %d times, want once", kg, n)
				}
			}
		})
	}
}

// TestMetadataFor: acknowledged task states are grouped by operator uid in
// job-graph order, with each operator's parallelism and max parallelism,
// and subtasks sorted; states of unknown uids are dropped.
func TestMetadataFor(t *testing.T) {
	g := dataflowtest.Graph(dataflowtest.Node("src", 2), dataflowtest.Node("map", 2, dataflowtest.Fwd(0)), dataflowtest.Node("agg", 3, dataflowtest.Hash(1)))
	jg, err := dataflow.BuildJobGraph(g, 32)
	if err != nil {
		t.Fatal(err)
	}
	op := func(uid, v string) checkpoint.OperatorSubtaskState {
		return checkpoint.OperatorSubtaskState{UID: uid, Operator: map[string][][]byte{"s": elems(v)}}
	}
	states := []checkpoint.TaskState{
		{Task: checkpoint.TaskID{Vertex: 1, Subtask: 2}, Operators: []checkpoint.OperatorSubtaskState{op("agg", "agg2")}},
		{Task: checkpoint.TaskID{Vertex: 0, Subtask: 1}, Operators: []checkpoint.OperatorSubtaskState{op("src", "src1"), op("map", "map1")}},
		{Task: checkpoint.TaskID{Vertex: 1, Subtask: 0}, Operators: []checkpoint.OperatorSubtaskState{op("agg", "agg0"), op("gone", "x")}},
		{Task: checkpoint.TaskID{Vertex: 0, Subtask: 0}, Operators: []checkpoint.OperatorSubtaskState{op("src", "src0")}},
	}
	ts := time.Unix(1700000000, 0)
	md, err := metadataFor("job", jg, 5, checkpoint.Final, ts, states)
	if err != nil {
		t.Fatal(err)
	}
	if md.JobID != "job" || md.ID != 5 || md.Kind != checkpoint.Final || !md.Timestamp.Equal(ts) {
		t.Errorf("header = %+v", md)
	}
	var got []string
	for _, o := range md.Operators {
		line := fmt.Sprintf("%s p%d max%d:", o.UID, o.Parallelism, o.MaxParallelism)
		for _, s := range o.Subtasks {
			line += fmt.Sprintf(" %d=%s", s.Subtask, s.State.Operator["s"][0])
		}
		got = append(got, line)
	}
	want := []string{"src p2 max32: 0=src0 1=src1", "map p2 max32: 1=map1", "agg p3 max32: 0=agg0 2=agg2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("operators:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
