package weakrt

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/dataflow/dataflowtest"
)

// TestGatherWeak is the rule of a whole-job restart in WEAKLY_CONSISTENT
// mode over a scripted storage: each task's newest snapshot that verifies;
// one whose metadata cannot be read, or that does not verify, is skipped
// with its reason and the task falls back to its previous one; a task
// with none that verifies (or none at all) starts fresh; a task's older
// snapshots, and its newer ones that did not verify, go with its chosen
// one; gaps in the ids change nothing.
func TestGatherWeak(t *testing.T) {
	// Task 1/1 never snapshotted: it is in no result.
	a, b, c := checkpoint.TaskID{Vertex: 0, Subtask: 0}, checkpoint.TaskID{Vertex: 0, Subtask: 1}, checkpoint.TaskID{Vertex: 1, Subtask: 0}
	// id -> task; unreadable metadata and failing verification by id.
	owner := map[checkpoint.ID]checkpoint.TaskID{2: a, 3: b, 5: a, 7: c, 8: b, 11: a, 12: c, 15: b}
	unreadable := map[checkpoint.ID]bool{14: true}
	corrupt := map[checkpoint.ID]bool{15: true, 12: true, 7: true}
	ids := []checkpoint.ID{2, 3, 5, 7, 8, 11, 12, 14, 15}
	var verified []checkpoint.ID
	taskOf := func(id checkpoint.ID) (checkpoint.TaskID, error) {
		if unreadable[id] {
			return checkpoint.TaskID{}, fmt.Errorf("snapshot %d: _metadata: checksum mismatch", id)
		}
		return owner[id], nil
	}
	verify := func(id checkpoint.ID) error {
		verified = append(verified, id)
		if corrupt[id] {
			return fmt.Errorf("snapshot %d: state file: size mismatch", id)
		}
		return nil
	}
	g, skipped, err := gatherWeak(ids, taskOf, verify)
	if err != nil {
		t.Fatal(err)
	}
	// a: 11 (5, 2 older); b: 15 corrupt, so 8 (3 older); c: 12 and 7
	// corrupt, so none; 1/1: none.
	want := map[checkpoint.TaskID]checkpoint.ID{a: 11, b: 8}
	if !maps.Equal(g.latest, want) {
		t.Errorf("latest = %v, want %v", g.latest, want)
	}
	// (15 did not verify: it goes with b's point, 8, once b has a newer
	// snapshot.)
	wantOlder := map[checkpoint.ID][]checkpoint.ID{11: {5, 2}, 8: {15, 3}}
	if !maps.EqualFunc(g.older, wantOlder, slices.Equal) {
		t.Errorf("older = %v, want %v", g.older, wantOlder)
	}
	// Only candidates are verified: newest first, never a task's older
	// snapshot once it has its point.
	if want := []checkpoint.ID{15, 12, 11, 8, 7}; !slices.Equal(verified, want) {
		t.Errorf("verified %v, want %v", verified, want)
	}
	var got []string
	for _, s := range skipped {
		got = append(got, s.Error())
	}
	wantSkipped := []string{
		"snapshot 15: state file: size mismatch",
		"snapshot 14: _metadata: checksum mismatch",
		"snapshot 12: state file: size mismatch",
		"snapshot 7: state file: size mismatch",
	}
	if !slices.Equal(got, wantSkipped) {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantSkipped, "\n"))
	}

	// Nothing in storage: everything starts fresh.
	g, skipped, err = gatherWeak(nil, taskOf, verify)
	if err != nil || len(g.latest) != 0 || len(skipped) != 0 {
		t.Errorf("empty storage: %v, %v, %v; want nothing", g.latest, skipped, err)
	}

	// A snapshot the job cannot restore ends the gathering, from either
	// check: no task may restore while another's snapshot is refused.
	for _, at := range []string{"taskOf", "verify"} {
		bad := fmt.Errorf("%w: snapshot 8 is of another graph", errWeakIncompatible)
		tOf, ver := taskOf, verify
		if at == "taskOf" {
			tOf = func(id checkpoint.ID) (checkpoint.TaskID, error) {
				if id == 8 {
					return checkpoint.TaskID{}, bad
				}
				return taskOf(id)
			}
		} else {
			ver = func(id checkpoint.ID) error {
				if id == 8 {
					return bad
				}
				return verify(id)
			}
		}
		if _, _, err := gatherWeak(ids, tOf, ver); !errors.Is(err, errWeakIncompatible) {
			t.Errorf("incompatible snapshot at %s: %v, want errWeakIncompatible", at, err)
		}
	}
}

// TestWeakTaskOf: a task snapshot names its task by its chain head's uid
// and subtask; one that this job cannot restore is refused with what to
// do, and one of a task the job lost is passed over with
// --allow-non-restored-state.
func TestWeakTaskOf(t *testing.T) {
	build := func(srcP, aggP int) *dataflow.JobGraph {
		t.Helper()
		jg, err := dataflow.BuildJobGraph(dataflowtest.Graph(dataflowtest.Node("src", srcP), dataflowtest.Node("agg", aggP, dataflowtest.Hash(0))), 128)
		if err != nil {
			t.Fatal(err)
		}
		return jg
	}
	snap := func(uid string, p, sub int, pos *checkpoint.WeakPositions) *checkpoint.Metadata {
		return &checkpoint.Metadata{ID: 4, Operators: []checkpoint.OperatorState{
			{UID: "src", Parallelism: 2},
			{UID: uid, Parallelism: p, Subtasks: []checkpoint.SubtaskStateEntry{{Subtask: sub, State: checkpoint.OperatorSubtaskState{UID: uid, Weak: pos}}}},
		}}
	}
	aggPos := &checkpoint.WeakPositions{Inputs: make([]checkpoint.WeakChannelPosition, 2)}
	srcPos := &checkpoint.WeakPositions{Outputs: [][]uint64{{3, 4}}}
	jg := build(2, 2)
	cases := []struct {
		name    string
		jg      *dataflow.JobGraph
		md      *checkpoint.Metadata
		allow   bool
		want    checkpoint.TaskID
		skip    bool
		wantErr string
	}{
		{name: "consumer", jg: jg, md: snap("agg", 2, 1, aggPos), want: checkpoint.TaskID{Vertex: 1, Subtask: 1}},
		{name: "source", jg: jg, md: snap("src", 2, 0, srcPos), want: checkpoint.TaskID{Vertex: 0, Subtask: 0}},
		{name: "another mode", jg: jg, md: snap("agg", 2, 1, nil), wantErr: "holds no task's weak positions: it was taken in another execution.checkpointing.mode"},
		{name: "rescaled", jg: build(2, 3), md: snap("agg", 2, 1, aggPos), wantErr: `subtask 1 of "agg" at parallelism 2, the job has 3: a WEAKLY_CONSISTENT job cannot change a task's parallelism`},
		{name: "producer rescaled", jg: build(3, 2), md: snap("agg", 2, 1, aggPos), wantErr: `positions for 2 input channels of "agg", the job has 3`},
		{name: "consumers rescaled", jg: build(2, 1), md: snap("src", 2, 0, srcPos), wantErr: `positions for 2 consumers of "src"'s output 0, the job has 1`},
		{name: "task gone", jg: jg, md: snap("old", 2, 1, aggPos), wantErr: `first operator has uid "old", and no task of this job starts with that operator`},
		{name: "task gone, allowed", jg: jg, md: snap("old", 2, 1, aggPos), allow: true, skip: true},
	}
	for _, c := range cases {
		got, ok, err := weakTaskOf(c.jg, c.md, "task snapshot chk-4", c.allow)
		switch {
		case c.wantErr != "":
			if !errors.Is(err, errWeakIncompatible) || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v\nwant errWeakIncompatible containing %q", c.name, err, c.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case ok == c.skip || (ok && got != c.want):
			t.Errorf("%s: task %v ok=%v, want %v ok=%v", c.name, got, ok, c.want, !c.skip)
		}
	}
}
