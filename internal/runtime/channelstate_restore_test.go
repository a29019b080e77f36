package runtime

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/dataflow/dataflowtest"
)

// unalignedCheckpoint is the metadata of an unaligned checkpoint of
// src(2) -hash-> agg(aggP) where agg's subtask 0 holds in-flight records
// from src subtask 1.
func unalignedCheckpoint(aggP int) *restorePoint {
	h := &checkpoint.ChannelStateHandle{
		File: checkpoint.StateFile{Path: "chk-3/agg-0.channel", Size: 100},
		Channels: []checkpoint.InputChannelState{{
			Input: 0, ProducerUID: "src", ProducerParallelism: 2, Producer: 1,
			Segments: []checkpoint.Segment{{Offset: 9, Length: 91}}, Records: 7,
		}},
		BatchFormat: checkpoint.ChannelBatchTimed,
	}
	return &restorePoint{path: "chk-3", md: &checkpoint.Metadata{ID: 3, Operators: []checkpoint.OperatorState{
		{UID: "src", Parallelism: 2, MaxParallelism: 128},
		{UID: "agg", Parallelism: aggP, MaxParallelism: 128, Subtasks: []checkpoint.SubtaskStateEntry{
			{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "agg", Channels: h}},
		}},
	}}}
}

func TestCheckChannelState(t *testing.T) {
	build := func(srcP, aggP int, srcUID string) *dataflow.JobGraph {
		t.Helper()
		src := dataflowtest.Node("src", srcP)
		src.UID = srcUID
		jg, err := dataflow.BuildJobGraph(dataflowtest.Graph(src, dataflowtest.Node("agg", aggP, dataflowtest.Hash(0))), 128)
		if err != nil {
			t.Fatal(err)
		}
		return jg
	}
	cases := []struct {
		name string
		jg   *dataflow.JobGraph
		want string // "" for accepted
	}{
		{"same job", build(2, 2, "src"), ""},
		{"consumer rescaled", build(2, 3, "src"), `operator "agg", whose parallelism changed 2 -> 3; in-flight records cannot be redistributed: restore at the old parallelism, or take a savepoint (always aligned) of the old job and rescale from it`},
		{"producer rescaled", build(3, 2, "src"), `from "src" (parallelism 2), now its input 0 comes from "src" (parallelism 3)`},
		{"producer replaced", build(2, 2, "gen"), `from "src" (parallelism 2), now its input 0 comes from "gen" (parallelism 2)`},
	}
	for _, c := range cases {
		err := unalignedCheckpoint(2).checkChannelState(c.jg)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v\nwant it to contain %q", c.name, err, c.want)
		}
	}
	// The consumer chained behind another operator is no longer a task's
	// head: its channels are gone.
	jg, err := dataflow.BuildJobGraph(dataflowtest.Graph(dataflowtest.Node("src", 2), dataflowtest.Node("agg", 2, dataflowtest.Hash(0)), dataflowtest.Node("post", 2, dataflowtest.Fwd(1))), 128)
	if err != nil {
		t.Fatal(err)
	}
	rp := unalignedCheckpoint(2)
	rp.md.Operators[1].UID = "post"
	rp.md.Operators[1].Subtasks[0].State.UID = "post"
	if err := rp.checkChannelState(jg); err == nil || !strings.Contains(err.Error(), `operator uid "post", which is no longer the first operator of a task`) {
		t.Errorf("channel state of a chained operator: %v", err)
	}
	// Channel state from before event time encodes batches without the
	// timed flag: refused, naming the ways out.
	old := unalignedCheckpoint(2)
	old.md.Operators[1].Subtasks[0].State.Channels.BatchFormat = 0
	if err := old.checkChannelState(build(2, 2, "src")); err == nil || !strings.Contains(err.Error(), "batch format 0, written by a weir before event time") || !strings.Contains(err.Error(), "savepoint") {
		t.Errorf("old batch format: %v", err)
	}
	var none *restorePoint
	if err := none.checkChannelState(jg); err != nil {
		t.Errorf("no restore point: %v", err)
	}
}

func TestChannelsFor(t *testing.T) {
	rp := unalignedCheckpoint(2)
	if h := rp.channelsFor("agg", 0); h == nil || h.Channels[0].Records != 7 {
		t.Errorf("agg#0: %+v, want the handle", h)
	}
	for _, c := range []struct {
		uid     string
		subtask int
	}{{"agg", 1}, {"src", 0}, {"missing", 0}} {
		if h := rp.channelsFor(c.uid, c.subtask); h != nil {
			t.Errorf("%s#%d: %+v, want nil", c.uid, c.subtask, h)
		}
	}
	if !hasState(rp.md.Operators[1]) {
		t.Errorf("an operator holding only channel state has state")
	}
}
