package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

// withChannels adds channel state to subtask 0 of sampleMetadata's "agg":
// two input channels, one with two segments around the other's.
func withChannels(md *checkpoint.Metadata) *checkpoint.Metadata {
	md.Operators[1].Subtasks[0].State.Channels = &checkpoint.ChannelStateHandle{
		File: checkpoint.StateFile{Path: "chk-7/agg-1c9d0a2e-0.channel", Size: 100, CRC32C: 0xfeedf00d},
		Channels: []checkpoint.InputChannelState{
			{Input: 0, ProducerUID: "source", ProducerParallelism: 2, Producer: 1, Records: 30,
				Segments: []checkpoint.Segment{{Offset: 9, Length: 20}, {Offset: 60, Length: 40}}},
			{Input: 0, ProducerUID: "source", ProducerParallelism: 2, Producer: 0, Records: 7,
				Segments: []checkpoint.Segment{{Offset: 29, Length: 31}}},
			{Input: 1, ProducerUID: "other", ProducerParallelism: 1, Producer: 0, Segments: []checkpoint.Segment{}},
		},
	}
	return md
}

func sampleV2(t testing.TB) []byte {
	md := withChannels(sampleMetadata("job", 7,
		checkpoint.StateFile{Path: "chk-7/1-0-keyed", Size: 10, CRC32C: 0xdeadbeef}))
	b, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A version-1 file written before channel state existed still decodes,
// and metadata without channel state is still written byte for byte as
// version 1, so older builds read aligned checkpoints and savepoints.
func TestDecodeVersion1Golden(t *testing.T) {
	golden, err := os.ReadFile("testdata/metadata-v1.golden")
	if err != nil {
		t.Fatal(err)
	}
	md, err := Decode(golden)
	if err != nil {
		t.Fatal(err)
	}
	want := sampleMetadata("job", 7,
		checkpoint.StateFile{Path: "chk-7/1-0-keyed", Size: 10, CRC32C: 0xdeadbeef},
		checkpoint.StateFile{Path: "chk-7/1-1-keyed", Size: 0, CRC32C: 0})
	if !reflect.DeepEqual(md, want) {
		t.Fatalf("golden decodes to\n%+v\nwant\n%+v", md, want)
	}
	again, err := Encode(md)
	if err != nil || !bytes.Equal(again, golden) {
		t.Fatalf("re-encoding the golden file differs (err %v)", err)
	}
}

func TestEncodeDecodeVersion2(t *testing.T) {
	md := withChannels(sampleMetadata("job", 7,
		checkpoint.StateFile{Path: "chk-7/1-0-keyed", Size: 10, CRC32C: 0xdeadbeef}))
	b, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint16(b[8:]); v != 2 {
		t.Fatalf("metadata with channel state written as version %d, want 2", v)
	}
	for _, s := range []string{`"channels": {`, `"producerUid": "source"`, `"producerParallelism": 2`, `"off": 60`, `"len": 40`, `"records": 30`} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("payload lacks %s", s)
		}
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, md) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, md)
	}
	// Without channel state the same metadata is version 1 again.
	got.Operators[1].Subtasks[0].State.Channels = nil
	b1, err := Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint16(b1[8:]); v != 1 {
		t.Fatalf("metadata without channel state written as version %d, want 1", v)
	}
	// A version-2 file without channel state (a future writer may always
	// write 2) is read too.
	v2 := append([]byte(nil), b1...)
	v2[9] = 2
	if _, err := Decode(reseal(v2)); err != nil {
		t.Fatalf("version 2 without channel state: %v", err)
	}
}

// Channel state in a version-1 file means the file is not what it says.
func TestDecodeRejectsChannelStateInVersion1(t *testing.T) {
	b := sampleV2(t)
	b[9] = 1
	_, err := Decode(reseal(b))
	want := "checkpoint data corrupt: metadata format version 1 holds channel state, which only version 2 can"
	if !errors.Is(err, ErrCorrupt) || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
}

func TestDecodeRejectsBadChannelState(t *testing.T) {
	// payload puts channels (a JSON list) into a handle of a 100-byte file.
	payload := func(chans string) []byte {
		return seal([]byte(`{"id": 1, "operators": [{"uid": "b", "subtasks": [{"subtask": 2, "state": {"uid": "b", "channels": {"file": {"path": "chk-1/b.channel", "size": 100}, "channels": ` + chans + `}}}]}]}`))
	}
	ch := func(input, producer, par int, records string, segs string) string {
		return `{"input": ` + itoa(int64(input)) + `, "producerUid": "a", "producerParallelism": ` + itoa(int64(par)) + `, "producer": ` + itoa(int64(producer)) + `, "records": ` + records + `, "segments": [` + segs + `]}`
	}
	ok := ch(0, 0, 2, "3", `{"off": 9, "len": 10}, {"off": 50, "len": 50}`)
	if _, err := Decode(payload("[" + ok + "]")); err != nil {
		t.Fatalf("valid handle rejected: %v", err)
	}
	const where = `metadata payload: operator "b" subtask 2: channel state file chk-1/b.channel: `
	for _, tc := range []struct {
		name, chans, want string
	}{
		{"segment past the end", ch(0, 0, 2, "1", `{"off": 90, "len": 11}`), "input channel 0: segment [90,+11) is empty or lies outside the frames of the 100-byte file"},
		{"segment in the header", ch(0, 0, 2, "1", `{"off": 8, "len": 11}`), "input channel 0: segment [8,+11) is empty or lies outside the frames of the 100-byte file"},
		{"empty segment", ch(0, 0, 2, "1", `{"off": 20, "len": 0}`), "input channel 0: segment [20,+0) is empty or lies outside the frames of the 100-byte file"},
		{"huge segment", ch(0, 0, 2, "1", `{"off": 9, "len": 9223372036854775807}`), "input channel 0: segment [9,+9223372036854775807) is empty or lies outside the frames of the 100-byte file"},
		{"out of stream order", ch(0, 0, 2, "1", `{"off": 50, "len": 10}, {"off": 9, "len": 10}`), "input channel 0: segment [9,+10) starts before the end 60 of the one before it; segments must be in stream order and disjoint"},
		{"overlap within a channel", ch(0, 0, 2, "1", `{"off": 9, "len": 10}, {"off": 18, "len": 10}`), "input channel 0: segment [18,+10) starts before the end 19 of the one before it"},
		{"overlap across channels", ok + ", " + ch(0, 1, 2, "1", `{"off": 15, "len": 10}`), "segments [9,+10) and [15,+10) of different input channels overlap"},
		{"listed twice", ok + ", " + ch(0, 0, 2, "0", ``), "input channel 1: input 0 from producer subtask 0 is listed twice"},
		{"no such producer", ch(0, 2, 2, "0", ``), "input channel 0: producer subtask 2 of parallelism 2 does not exist"},
		{"negative input", ch(-1, 0, 1, "0", ``), "input channel 0: negative input -1"},
		{"negative records", ch(0, 0, 1, "-1", ``), "input channel 0: negative record count -1"},
		{"records without bytes", ch(0, 0, 1, "4", ``), "input channel 0: 4 records but no segments"},
		{"no producer uid", `{"input": 0, "producerParallelism": 1, "producer": 0, "segments": []}`, "input channel 0: no producer uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(payload("[" + tc.chans + "]"))
			if !errors.Is(err, ErrCorrupt) || !strings.HasPrefix(err.Error(), "checkpoint data corrupt: "+where+tc.want) {
				t.Fatalf("error\n got %v\nwant %q", err, where+tc.want)
			}
		})
	}
	small := seal([]byte(`{"id": 1, "operators": [{"uid": "b", "subtasks": [{"subtask": 0, "state": {"uid": "b", "channels": {"file": {"path": "chk-1/b.channel", "size": 8}, "channels": []}}}]}]}`))
	if _, err := Decode(small); err == nil || !strings.Contains(err.Error(), "size 8 is smaller than the 9-byte header") {
		t.Fatalf("file smaller than its header: %v", err)
	}
}
