package storage

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/weirstream/weir/internal/checkpoint"
)

// readFrames reads every frame of data (copying payloads), checking it
// against h if h is not nil.
func readFrames(data []byte, h *checkpoint.ChannelStateHandle) ([]ChannelFrame, error) {
	r := NewChannelFrameReader(bytes.NewReader(data), h)
	var out []ChannelFrame
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		f.Payload = bytes.Clone(f.Payload)
		out = append(out, f)
	}
}

func TestChannelFrameRoundTrip(t *testing.T) {
	data, chans := channelFile(sampleFrames...)
	if !bytes.HasPrefix(data, []byte("WEIRCHS\x00\x01")) {
		t.Fatalf("header %q", data[:9])
	}
	h := &checkpoint.ChannelStateHandle{File: checkpoint.StateFile{Size: int64(len(data))}, Channels: chans}
	// Gate channels 1, 0, 2 appear in that order, so they are input
	// channels 0, 1, 2.
	wantIdx := []int{0, 0, 1, 2, 0, 1}
	for _, withHandle := range []bool{false, true} {
		var hh *checkpoint.ChannelStateHandle
		if withHandle {
			hh = h
		}
		// One byte per Read exercises every partial read of the buffer.
		r := NewChannelFrameReader(iotest.OneByteReader(bytes.NewReader(data)), hh)
		off := int64(ChannelStateHeaderLen)
		for i, want := range sampleFrames {
			f, err := r.Next()
			if err != nil {
				t.Fatalf("handle %v: frame %d: %v", withHandle, i, err)
			}
			idx := -1
			if withHandle {
				idx = wantIdx[i]
			}
			if f.Channel != want.ch || string(f.Payload) != want.payload || f.Offset != off || f.Index != idx {
				t.Fatalf("handle %v: frame %d: ch %d index %d offset %d payload %d bytes; want ch %d index %d offset %d payload %d bytes",
					withHandle, i, f.Channel, f.Index, f.Offset, len(f.Payload), want.ch, idx, off, len(want.payload))
			}
			off = int64(len(AppendChannelFrame(nil, want.ch, []byte(want.payload)))) + off
		}
		for range 2 {
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("handle %v: after the last frame: %v, want io.EOF (twice)", withHandle, err)
			}
		}
	}
}

// An empty file (header only) with a handle of no channels, or of channels
// without segments, reads as no frames.
func TestChannelFrameReaderEmpty(t *testing.T) {
	data := AppendChannelStateHeader(nil)
	h := &checkpoint.ChannelStateHandle{Channels: []checkpoint.InputChannelState{{ProducerUID: "src", ProducerParallelism: 1}}}
	if frames, err := readFrames(data, h); err != nil || len(frames) != 0 {
		t.Fatalf("frames %v, err %v", frames, err)
	}
}

func TestChannelFrameReaderRejects(t *testing.T) {
	good, chans := channelFile(sampleFrames...)
	// Frame offsets of sampleFrames: 9 a1, 13 a2, 17 b1, 21 c…, then a3, "".
	c3 := int64(21 + 1 + 3 + 70<<10)
	clone := func() []checkpoint.InputChannelState {
		out := slices.Clone(chans)
		for i := range out {
			out[i].Segments = slices.Clone(out[i].Segments)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		data  []byte
		chans func(c []checkpoint.InputChannelState) []checkpoint.InputChannelState
		want  string
	}{
		{name: "empty", data: []byte{}, want: "channel-state file truncated: 0 bytes, shorter than the 9-byte header"},
		{name: "bad magic", data: []byte("WEIRCHK\x00\x01"), want: `not a weir channel-state file: bad magic "WEIRCHK\x00", want "WEIRCHS\x00"`},
		{name: "newer version", data: []byte("WEIRCHS\x00\x02"), want: "channel-state file version 2 was written by a newer weir (this build reads version 1); restore with a newer weir"},
		{name: "version zero", data: []byte("WEIRCHS\x00\x00"), want: "unknown channel-state file version 0 (this build reads version 1)"},
		{name: "truncated payload", data: good[:len(good)-2-1], want: "frame at offset " + itoa(c3) + ": 2-byte payload: truncated after 1 bytes"},
		{name: "truncated length", data: append(AppendChannelStateHeader(nil), 3), want: "frame at offset 9: length: unexpected EOF"},
		{name: "truncated channel", data: append(AppendChannelStateHeader(nil), 0x80), want: "frame at offset 9: channel: unexpected EOF"},
		{name: "long varint", data: append(AppendChannelStateHeader(nil), 0x81, 0x00, 0), want: "frame at offset 9: channel: varint not in its shortest form"},
		{name: "overflowing varint", data: append(AppendChannelStateHeader(nil), 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), want: "frame at offset 9: length: varint overflows 64 bits"},
		{name: "channel out of range", data: AppendChannelFrame(AppendChannelStateHeader(nil), 1<<31, nil), want: "frame at offset 9: channel 2147483648 is out of range"},
		{name: "segment too short", chans: func(c []checkpoint.InputChannelState) []checkpoint.InputChannelState {
			c[0].Segments[0].Length--
			return c
		}, want: "frame at offset 13 of gate channel 1: its 2-byte payload crosses the end of segment [9,+7) of input channel 0"},
		{name: "frame outside segments", chans: func(c []checkpoint.InputChannelState) []checkpoint.InputChannelState {
			c[1].Segments = c[1].Segments[1:] // b1 at 17 is in no segment
			return c
		}, want: "frame at offset 17 of gate channel 0: lies outside every segment of the handle"},
		{name: "segment past the end", chans: func(c []checkpoint.InputChannelState) []checkpoint.InputChannelState {
			c[2].Segments = append(c[2].Segments, checkpoint.Segment{Offset: int64(len(good)), Length: 5})
			return c
		}, want: "channel-state file ends at offset " + itoa(int64(len(good))) + ", before the end of segment [" + itoa(int64(len(good))) + ",+5) of input channel 2"},
		{name: "segment of another channel", chans: func(c []checkpoint.InputChannelState) []checkpoint.InputChannelState {
			c[0].Segments = append(c[0].Segments, c[2].Segments...)
			c[2].Segments = nil
			slices.SortFunc(c[0].Segments, func(a, b checkpoint.Segment) int { return int(a.Offset - b.Offset) })
			return c
		}, want: "frame at offset 21 of gate channel 2: input channel 0 also has frames of gate channel 1"},
		{name: "one gate channel in two input channels", chans: func(c []checkpoint.InputChannelState) []checkpoint.InputChannelState {
			// a3, the second segment of gate channel 1, moves to a new
			// input channel 3.
			a3 := c[0].Segments[1]
			c[0].Segments = c[0].Segments[:1]
			return append(c, checkpoint.InputChannelState{Input: 1, ProducerUID: "src", ProducerParallelism: 3, Segments: []checkpoint.Segment{a3}})
		}, want: "frame at offset " + itoa(c3) + " of gate channel 1: frames of gate channel 1 belong to input channels 0 and 3"},
		{name: "overlapping segments", chans: func(c []checkpoint.InputChannelState) []checkpoint.InputChannelState {
			c[1].Segments[0].Offset--
			return c
		}, want: "channel-state handle: segment [16,+4) of input channel 1 is empty, overlaps another or lies in the header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := good
			if tc.data != nil {
				data = tc.data
			}
			var h *checkpoint.ChannelStateHandle
			if tc.chans != nil {
				h = &checkpoint.ChannelStateHandle{Channels: tc.chans(clone())}
			}
			_, err := readFrames(data, h)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n got %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// FuzzChannelStateFile checks that the frame reader never panics or
// over-allocates on arbitrary bytes, that every error wraps ErrCorrupt,
// that a file it accepts is exactly what the writer produces from the
// frames read (one encoding per file), and that the handle the recorder
// would derive from those frames checks out against the file.
func FuzzChannelStateFile(f *testing.F) {
	good, _ := channelFile(sampleFrames[:3]...)
	f.Add(good)
	f.Add(AppendChannelStateHeader(nil))
	f.Add(good[:len(good)-1])
	f.Add(append(AppendChannelStateHeader(nil), 0x81, 0x00, 0))
	f.Add(append(AppendChannelStateHeader(nil), 0, 0xff, 0xff, 0xff, 0xff, 0x0f))
	f.Fuzz(func(t *testing.T, data []byte) {
		frames, err := readFrames(data, nil)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		in := make([]frame, len(frames))
		for i, fr := range frames {
			in[i] = frame{ch: fr.Channel, payload: string(fr.Payload)}
		}
		again, chans := channelFile(in...)
		if !bytes.Equal(again, data) {
			t.Fatalf("accepted file re-encodes differently:\n%q\n%q", data, again)
		}
		h := &checkpoint.ChannelStateHandle{File: checkpoint.StateFile{Size: int64(len(data))}, Channels: chans}
		withH, err := readFrames(data, h)
		if err != nil {
			t.Fatalf("derived handle rejected: %v", err)
		}
		for i := range withH {
			if withH[i].Index < 0 || chans[withH[i].Index].Producer != withH[i].Channel {
				t.Fatalf("frame %d of gate channel %d placed in input channel %d", i, withH[i].Channel, withH[i].Index)
			}
		}
	})
}

// Recording and replay handle one frame per batch: neither may allocate
// per frame once their buffers are warm.
func TestChannelFrameAllocs(t *testing.T) {
	payload := bytes.Repeat([]byte{7}, 16<<10)
	dst := make([]byte, 0, 64<<10)
	if n := testing.AllocsPerRun(100, func() { dst = AppendChannelFrame(dst[:0], 3, payload) }); n != 0 {
		t.Errorf("AppendChannelFrame: %v allocs per frame, want 0", n)
	}
	data := AppendChannelStateHeader(nil)
	const frames = 200
	for range frames {
		data = AppendChannelFrame(data, 3, payload)
	}
	h := &checkpoint.ChannelStateHandle{Channels: []checkpoint.InputChannelState{{ProducerUID: "src", ProducerParallelism: 4, Producer: 3,
		Segments: []checkpoint.Segment{{Offset: int64(ChannelStateHeaderLen), Length: int64(len(data) - ChannelStateHeaderLen)}}}}}
	src := bytes.NewReader(data)
	r := NewChannelFrameReader(src, h)
	if _, err := r.Next(); err != nil { // warm: header, payload buffer
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(frames-2, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ChannelFrameReader.Next: %v allocs per frame, want 0", n)
	}
}

func BenchmarkChannelFrameReader(b *testing.B) {
	payload := bytes.Repeat([]byte{7}, 16<<10)
	data := AppendChannelStateHeader(nil)
	for i := range 256 {
		data = AppendChannelFrame(data, i%4, payload)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewChannelFrameReader(bytes.NewReader(data), nil)
		for {
			if _, err := r.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
	}
}
