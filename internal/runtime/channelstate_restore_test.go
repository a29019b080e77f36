package runtime

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/dataflow/dataflowtest"
	"github.com/weirstream/weir/internal/keygroup"
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
	build := func(srcP, aggP int, srcUID string, edge dataflow.Partition) *dataflow.JobGraph {
		t.Helper()
		src := dataflowtest.Node("src", srcP)
		src.UID = srcUID
		in := dataflowtest.Hash(0)
		if edge != dataflow.Hash {
			in = dataflow.Edge{From: 0, Partition: edge}
		}
		jg, err := dataflow.BuildJobGraph(dataflowtest.Graph(src, dataflowtest.Node("agg", aggP, in)), 128)
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
		{"same job", build(2, 2, "src", dataflow.Hash), ""},
		{"consumer rescaled", build(2, 3, "src", dataflow.Hash), ""},
		{"producer rescaled", build(3, 2, "src", dataflow.Hash), ""},
		{"rebalance rescaled", build(2, 1, "src", dataflow.Rebalance), ""},
		{"broadcast same job", build(2, 2, "src", dataflow.Broadcast), ""},
		{"broadcast rescaled", build(2, 3, "src", dataflow.Broadcast), ""},
		{"producer replaced", build(2, 2, "gen", dataflow.Hash), `from "src", now its input 0 comes from "gen"`},
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
	if err := old.checkChannelState(build(2, 2, "src", dataflow.Hash)); err == nil || !strings.Contains(err.Error(), "batch format 0, written by a weir before event time") || !strings.Contains(err.Error(), "savepoint") {
		t.Errorf("old batch format: %v", err)
	}
	var none *restorePoint
	if err := none.checkChannelState(jg); err != nil {
		t.Errorf("no restore point: %v", err)
	}
}

// TestChannelReplayFor: at the recorded layout a subtask replays its own
// file as recorded; after a rescale, a hash input's records go to the new
// subtasks whose key groups overlap the old subtask's (filtered to their
// own), a rebalance input's whole channels to old subtask mod the new
// parallelism, a broadcast input's from old subtask new mod old
// parallelism, each on the gate channel of its producer now.
func TestChannelReplayFor(t *testing.T) {
	graph := func(srcP, aggP int, edge dataflow.Partition) *dataflow.Vertex {
		t.Helper()
		in := dataflowtest.Hash(0)
		if edge != dataflow.Hash {
			in = dataflow.Edge{From: 0, Partition: edge}
		}
		jg, err := dataflow.BuildJobGraph(dataflowtest.Graph(dataflowtest.Node("src", srcP), dataflowtest.Node("agg", aggP, in)), 128)
		if err != nil {
			t.Fatal(err)
		}
		return jg.Vertices[1]
	}
	rp := unalignedCheckpoint(2)
	same := graph(2, 2, dataflow.Hash)
	if p := rp.channelReplayFor(same, 0); len(p) != 1 || p[0].gate != nil || p[0].handle.Channels[0].Records != 7 {
		t.Errorf("agg#0 at the recorded layout: %+v, want its own handle as recorded", p)
	}
	if p := rp.channelReplayFor(same, 1); p != nil {
		t.Errorf("agg#1 at the recorded layout: %+v, want nothing", p)
	}
	// Old agg#0 of 2 held key groups [0,64); at 3, agg#0 owns [0,43),
	// agg#1 [43,86), agg#2 [86,128).
	up := graph(2, 3, dataflow.Hash)
	for sub, own := range map[int]keygroup.Range{0: {Start: 0, End: 43}, 1: {Start: 43, End: 86}} {
		p := rp.channelReplayFor(up, sub)
		if len(p) != 1 || p[0].gate[0] != 1 || p[0].keys[0] == nil || p[0].keys[0].own != own || p[0].keys[0].maxParallelism != 128 {
			t.Errorf("agg#%d of 3: %+v, want channel 0 on gate channel 1 (producer 1) keeping %v", sub, p, own)
		}
	}
	if p := rp.channelReplayFor(up, 2); p != nil {
		t.Errorf("agg#2 of 3 owns none of old agg#0's key groups: %+v", p)
	}
	// The producer down to 1: producer 1's records arrive on gate channel 0.
	if p := rp.channelReplayFor(graph(1, 2, dataflow.Hash), 0); len(p) != 1 || p[0].gate[0] != 0 {
		t.Errorf("agg#0 after the producer went to 1: %+v, want gate channel 0", p)
	}
	// Rebalance: whole channels, old subtask 0 to new subtask 0 % p.
	reb := graph(2, 3, dataflow.Rebalance)
	if p := rp.channelReplayFor(reb, 0); len(p) != 1 || p[0].gate[0] != 1 || p[0].keys[0] != nil {
		t.Errorf("rebalance agg#0 of 3: %+v, want the whole channel on gate channel 1", p)
	}
	if p := rp.channelReplayFor(reb, 1); p != nil {
		t.Errorf("rebalance agg#1 of 3: %+v, want nothing", p)
	}
	// Broadcast: new subtask j continues where old subtask j mod 2 stood.
	bc := graph(2, 3, dataflow.Broadcast)
	for _, sub := range []int{0, 2} {
		if p := rp.channelReplayFor(bc, sub); len(p) != 1 || p[0].gate[0] != 1 || p[0].keys[0] != nil {
			t.Errorf("broadcast agg#%d of 3: %+v, want old agg#0's whole channel on gate channel 1", sub, p)
		}
	}
	if p := rp.channelReplayFor(bc, 1); p != nil {
		t.Errorf("broadcast agg#1 of 3 continues old agg#1, which recorded nothing: %+v", p)
	}
	for _, uid := range []string{"src", "missing"} {
		v := graph(2, 2, dataflow.Hash)
		v.Chain[0].UID = uid
		if p := rp.channelReplayFor(v, 0); p != nil {
			t.Errorf("%s#0: %+v, want nil", uid, p)
		}
	}
	if !hasState(rp.md.Operators[1]) {
		t.Errorf("an operator holding only channel state has state")
	}
}
