package storage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// content is the deterministic body of state file name in checkpoint id,
// long enough to take several buffer flushes at small buffer sizes.
func content(id checkpoint.ID, name string) []byte {
	return bytes.Repeat(fmt.Appendf(nil, "%s@%d;", name, id), 40)
}

// stateNames are the files every test checkpoint holds, one per subtask.
var stateNames = [...]string{"1-0-keyed", "1-1-keyed"}

// writeCheckpoint writes a complete checkpoint id: its state files, then its
// metadata.
func writeCheckpoint(t *testing.T, s *FS, id checkpoint.ID) *checkpoint.Metadata {
	t.Helper()
	ctx := context.Background()
	var files []checkpoint.StateFile
	for _, name := range stateNames {
		f, err := s.WriteFile(ctx, id, name, func(w io.Writer) error {
			_, err := w.Write(content(id, name))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	md := sampleMetadata("job", id, files...)
	if _, err := s.WriteMetadata(ctx, md); err != nil {
		t.Fatal(err)
	}
	return md
}

// sampleMetadata builds the metadata of a checkpoint whose operator "agg"
// has one keyed state file per subtask and whose source has operator state.
func sampleMetadata(job string, id checkpoint.ID, files ...checkpoint.StateFile) *checkpoint.Metadata {
	md := &checkpoint.Metadata{
		JobID:     job,
		ID:        id,
		Kind:      checkpoint.Periodic,
		Timestamp: time.Date(2025, 3, 1, 12, 0, int(id), 0, time.UTC),
		Operators: []checkpoint.OperatorState{{
			UID: "source", Parallelism: 1, MaxParallelism: 128,
			Subtasks: []checkpoint.SubtaskStateEntry{{
				Subtask: 0,
				State: checkpoint.OperatorSubtaskState{
					UID:      "source",
					Operator: map[string][][]byte{"offsets": {[]byte("p0=17"), []byte("p1=\x00\xff")}},
				},
			}},
		}, {
			UID: "agg", Parallelism: len(files), MaxParallelism: 128,
		}},
	}
	for i, f := range files {
		half := f.Size / 2
		md.Operators[1].Subtasks = append(md.Operators[1].Subtasks, checkpoint.SubtaskStateEntry{
			Subtask: i,
			State: checkpoint.OperatorSubtaskState{
				UID: "agg",
				Keyed: &checkpoint.KeyedStateHandle{File: f, KeyGroups: []checkpoint.KeyGroupOffset{
					{KeyGroup: 2 * i, Offset: 0, Length: half},
					{KeyGroup: 2*i + 1, Offset: half, Length: f.Size - half},
				}},
			},
		})
	}
	return md
}

// openStore opens storage for job "job" in a fresh temporary root.
func openStore(t *testing.T, opts ...Option) *FS {
	t.Helper()
	s, err := Open(t.TempDir(), "job", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// flipByte corrupts one byte of the file at path.
func flipByte(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree lists every file and directory under dir, relative to it, sorted.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// errStrings renders errors for exact comparison.
func errStrings(errs []error) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

// frame is one frame of a test channel-state file.
type frame struct {
	ch      int
	payload string
}

// channelFile lays out frames as a channel-state file and derives the
// handle's input channels the way the recorder does: one input channel per
// gate channel (input 0, producer = ch, in order of first appearance),
// consecutive frames of one channel merged into one segment, one record
// per frame.
func channelFile(frames ...frame) ([]byte, []checkpoint.InputChannelState) {
	b := AppendChannelStateHeader(nil)
	var chans []checkpoint.InputChannelState
	idx := map[int]int{}
	par := 1
	for _, f := range frames {
		par = max(par, f.ch+1)
	}
	last := -1
	for _, f := range frames {
		i, ok := idx[f.ch]
		if !ok {
			i = len(chans)
			idx[f.ch] = i
			chans = append(chans, checkpoint.InputChannelState{ProducerUID: "src", ProducerParallelism: par, Producer: f.ch, Segments: []checkpoint.Segment{}})
		}
		off := int64(len(b))
		b = AppendChannelFrame(b, f.ch, []byte(f.payload))
		c := &chans[i]
		if last == f.ch {
			c.Segments[len(c.Segments)-1].Length += int64(len(b)) - off
		} else {
			c.Segments = append(c.Segments, checkpoint.Segment{Offset: off, Length: int64(len(b)) - off})
		}
		c.Records++
		last = f.ch
	}
	return b, chans
}

// writeChannelFile writes frames as channel-state file name of checkpoint
// id and returns its handle.
func writeChannelFile(t *testing.T, s *FS, id checkpoint.ID, name string, frames ...frame) *checkpoint.ChannelStateHandle {
	t.Helper()
	data, chans := channelFile(frames...)
	f, err := s.WriteFile(context.Background(), id, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return &checkpoint.ChannelStateHandle{File: f, Channels: chans}
}

// sampleFrames interleave three gate channels, with a payload larger than
// the reader's buffer.
var sampleFrames = []frame{{1, "a1"}, {1, "a2"}, {0, "b1"}, {2, string(bytes.Repeat([]byte("c"), 70<<10))}, {1, "a3"}, {0, ""}}

// writeUnalignedCheckpoint writes checkpoint id like writeCheckpoint, plus
// channel state (sampleFrames) on subtask 1 of "agg".
func writeUnalignedCheckpoint(t *testing.T, s *FS, id checkpoint.ID) *checkpoint.Metadata {
	t.Helper()
	ctx := context.Background()
	var files []checkpoint.StateFile
	for _, name := range stateNames {
		f, err := s.WriteFile(ctx, id, name, func(w io.Writer) error {
			_, err := w.Write(content(id, name))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	md := sampleMetadata("job", id, files...)
	md.Operators[1].Subtasks[1].State.Channels = writeChannelFile(t, s, id, "agg-1.channel", sampleFrames...)
	if _, err := s.WriteMetadata(ctx, md); err != nil {
		t.Fatal(err)
	}
	return md
}
