package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
)

// channelFixture writes the channel-state file of subtask 1 of "agg": gate
// channels 0 and 1 are input 0 from "src" subtasks 0 and 1, gate channel 2
// is input 1 from "side"; frames c0 c0 c1 c0 c2, and "side" recorded
// nothing more. It returns the handle.
func channelFixture(t *testing.T, s *storage.FS, id checkpoint.ID) *checkpoint.ChannelStateHandle {
	t.Helper()
	b := storage.AppendChannelStateHeader(nil)
	seg := func(ch int, payloads ...string) checkpoint.Segment {
		off := len(b)
		for _, p := range payloads {
			b = storage.AppendChannelFrame(b, ch, []byte(p))
		}
		return checkpoint.Segment{Offset: int64(off), Length: int64(len(b) - off)}
	}
	a := seg(0, "one", "two")
	c := seg(1, "three")
	a2 := seg(0, "four")
	d := seg(2, strings.Repeat("x", 200))
	f := writeRaw(t, s, id, "agg-1.channel", b)
	return &checkpoint.ChannelStateHandle{File: f, Channels: []checkpoint.InputChannelState{
		{Input: 0, ProducerUID: "src", ProducerParallelism: 2, Producer: 0, Segments: []checkpoint.Segment{a, a2}, Records: 30},
		{Input: 0, ProducerUID: "src", ProducerParallelism: 2, Producer: 1, Segments: []checkpoint.Segment{c}, Records: 4},
		{Input: 1, ProducerUID: "side", ProducerParallelism: 1, Producer: 0, Segments: []checkpoint.Segment{d}, Records: 1},
		{Input: 2, ProducerUID: "idle", ProducerParallelism: 1, Producer: 0, Segments: []checkpoint.Segment{}},
	}}
}

func TestInspectChannelState(t *testing.T) {
	s := openStorage(t)
	h := channelFixture(t, s, 6)
	dir := commit(t, s, 6, checkpoint.Periodic,
		checkpoint.OperatorState{UID: "agg", Parallelism: 2, MaxParallelism: maxP, Subtasks: []checkpoint.SubtaskStateEntry{
			{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "agg"}},
			{Subtask: 1, State: checkpoint.OperatorSubtaskState{UID: "agg", Channels: h}},
		}})
	r, err := Inspect(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	seglen := func(ss ...checkpoint.Segment) (n int64) {
		for _, s := range ss {
			n += s.Length
		}
		return n
	}
	c := h.Channels
	want := []ChannelState{{Operator: "agg", Subtask: 1, File: "chk-6/agg-1.channel", Size: h.File.Size, CRC32C: h.File.CRC32C, Inputs: []InputChannel{
		{Input: 0, ProducerUID: "src", Producer: 0, ProducerParallelism: 2, GateChannel: 0, Segments: 2, Batches: 3, Records: 30, Bytes: seglen(c[0].Segments...)},
		{Input: 0, ProducerUID: "src", Producer: 1, ProducerParallelism: 2, GateChannel: 1, Segments: 1, Batches: 1, Records: 4, Bytes: seglen(c[1].Segments...)},
		{Input: 1, ProducerUID: "side", Producer: 0, ProducerParallelism: 1, GateChannel: 2, Segments: 1, Batches: 1, Records: 1, Bytes: seglen(c[2].Segments...)},
		{Input: 2, ProducerUID: "idle", Producer: 0, ProducerParallelism: 1, GateChannel: -1},
	}}}
	if !reflect.DeepEqual(r.ChannelState, want) {
		t.Fatalf("channel state:\n got %+v\nwant %+v", r.ChannelState, want)
	}
	if sum := seglen(c[0].Segments...) + seglen(c[1].Segments...) + seglen(c[2].Segments...); sum != h.File.Size-int64(storage.ChannelStateHeaderLen) {
		t.Fatalf("fixture: segments cover %d bytes of %d", sum, h.File.Size)
	}
	tot := r.Totals
	if tot.ChannelStateFiles != 1 || tot.ChannelStateBytes != h.File.Size || tot.InFlightRecords != 35 || tot.Subtasks != 2 {
		t.Errorf("totals: %d files, %d bytes, %d records, %d subtasks; want 1, %d, 35, 2", tot.ChannelStateFiles, tot.ChannelStateBytes, tot.InFlightRecords, tot.Subtasks, h.File.Size)
	}
	// The JSON names of the section, which `--json` users read.
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"channelState":[{"operator":"agg","subtask":1,"file":"chk-6/agg-1.channel"`, `"inputs":[{"input":0,"producerUid":"src","producer":0,"producerParallelism":2,"gateChannel":0,"segments":2,"batches":3,"records":30,"bytes":`, `"channelStateFiles":1`, `"inFlightRecords":35`} {
		if !strings.Contains(string(js), key) {
			t.Errorf("JSON lacks %s:\n%s", key, js)
		}
	}
}

// A channel-state file whose checksum matches but whose frames do not fit
// the handle's segments is corrupt: a restore could not replay it.
func TestInspectChannelStateMismatch(t *testing.T) {
	s := openStorage(t)
	h := channelFixture(t, s, 6)
	h.Channels[0].Segments[0].Length-- // ends inside frame "two"
	dir := commit(t, s, 6, checkpoint.Periodic,
		checkpoint.OperatorState{UID: "agg", Parallelism: 2, MaxParallelism: maxP, Subtasks: []checkpoint.SubtaskStateEntry{
			{Subtask: 1, State: checkpoint.OperatorSubtaskState{UID: "agg", Channels: h}},
		}})
	_, err := Inspect(context.Background(), dir)
	if !errors.Is(err, storage.ErrCorrupt) || errors.Is(err, ErrNotCheckpoint) {
		t.Fatalf("err %v, want one wrapping storage.ErrCorrupt only", err)
	}
	for _, sub := range []string{`operator "agg" subtask 1`, "chk-6/agg-1.channel", "crosses the end of segment"} {
		if !strings.Contains(err.Error(), sub) {
			t.Errorf("error %q lacks %q", err, sub)
		}
	}
	// And a damaged file is caught by verification, naming it.
	s2 := openStorage(t)
	h2 := channelFixture(t, s2, 6)
	dir2 := commit(t, s2, 6, checkpoint.Periodic,
		checkpoint.OperatorState{UID: "agg", Parallelism: 2, MaxParallelism: maxP, Subtasks: []checkpoint.SubtaskStateEntry{
			{Subtask: 1, State: checkpoint.OperatorSubtaskState{UID: "agg", Channels: h2}},
		}})
	abs := filepath.Join(s2.JobDir(), "chk-6", "agg-1.channel")
	if err := os.Truncate(abs, 12); err != nil {
		t.Fatal(err)
	}
	if _, err := Inspect(context.Background(), dir2); !errors.Is(err, storage.ErrCorrupt) || !strings.Contains(err.Error(), "chk-6/agg-1.channel") || !strings.Contains(err.Error(), "size mismatch") {
		t.Fatalf("truncated channel-state file: %v", err)
	}
}
