package storage

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

// A savepoint is a verified copy of a completed checkpoint that loads from
// wherever its folder is moved, with the same state bytes.
func TestSavepointCopiesAndRelocates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		md := writeCheckpoint(t, s, 4)
		target := filepath.Join(b.dir(), "saves")
		dir, err := s.Savepoint(context.Background(), 4, target)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(target, SavepointPrefix+filepath.Base(s.JobDir())+"-4"); dir != want {
			t.Fatalf("savepoint at %s, want %s", dir, want)
		}
		moved := filepath.Join(b.dir(), "elsewhere")
		moveTree(t, b.fs, dir, moved)
		got, view, err := LoadPath(context.Background(), moved, WithFS(b.fs))
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != checkpoint.Savepoint || got.ID != 4 {
			t.Fatalf("loaded kind %v id %d", got.Kind, got.ID)
		}
		files := func(m *checkpoint.Metadata) (out []checkpoint.StateFile) {
			for _, op := range m.Operators {
				for _, st := range op.Subtasks {
					if st.State.Keyed != nil {
						out = append(out, st.State.Keyed.File)
					}
				}
			}
			return out
		}
		if !reflect.DeepEqual(files(got), files(md)) {
			t.Fatalf("savepoint files %+v, checkpoint files %+v", files(got), files(md))
		}
		for _, f := range files(got) {
			a, err := view.ReadFile(context.Background(), f)
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.ReadFile(context.Background(), f)
			if err != nil || string(a) != string(b) {
				t.Fatalf("%s differs from the checkpoint's (%v)", f.Path, err)
			}
		}
		// A savepoint is never overwritten.
		again := b.dir()
		if _, err := s.Savepoint(context.Background(), 4, again); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Savepoint(context.Background(), 4, again); err == nil {
			t.Fatal("a second savepoint of checkpoint 4 into the same folder overwrote the first")
		}
	})
}

// A corrupt checkpoint gives no savepoint, and no partial folder.
func TestSavepointOfCorruptCheckpoint(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		md := writeCheckpoint(t, s, 2)
		var f checkpoint.StateFile
		for _, op := range md.Operators {
			for _, st := range op.Subtasks {
				if st.State.Keyed != nil {
					f = st.State.Keyed.File
				}
			}
		}
		flipByteFS(t, b.fs, filepath.Join(s.JobDir(), f.Path), 0)
		target := b.dir()
		if _, err := s.Savepoint(context.Background(), 2, target); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("savepoint of a corrupt checkpoint: %v, want ErrCorrupt", err)
		}
		if entries, _ := b.fs.ReadDir(target); len(entries) != 0 {
			t.Fatalf("left behind: %v", entries)
		}
	})
}

// A savepoint of an unaligned checkpoint copies its channel-state file
// too, verified, and the copy's handle points into the savepoint folder.
func TestSavepointCopiesChannelState(t *testing.T) {
	s := openStore(t)
	md := writeUnalignedCheckpoint(t, s, 5)
	dir, err := s.Savepoint(context.Background(), 5, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(s.JobDir()); err != nil { // the savepoint must not need it
		t.Fatal(err)
	}
	got, view, err := LoadPath(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	h, want := got.Operators[1].Subtasks[1].State.Channels, md.Operators[1].Subtasks[1].State.Channels
	if h == nil || !reflect.DeepEqual(h, want) {
		t.Fatalf("savepoint channel state %+v, checkpoint's %+v", h, want)
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(h.File.Path))); err != nil {
		t.Fatalf("channel-state file not copied into the savepoint: %v", err)
	}
	r, err := view.OpenFile(context.Background(), h.File)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	frames := 0
	for fr := NewChannelFrameReader(r, h); ; frames++ {
		if _, err := fr.Next(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
	}
	if frames != len(sampleFrames) {
		t.Fatalf("%d frames in the copy, want %d", frames, len(sampleFrames))
	}
}

// A damaged channel-state file gives no savepoint.
func TestSavepointOfCorruptChannelState(t *testing.T) {
	s := openStore(t)
	md := writeUnalignedCheckpoint(t, s, 2)
	flipByte(t, filepath.Join(s.JobDir(), md.Operators[1].Subtasks[1].State.Channels.File.Path), 12)
	target := t.TempDir()
	if _, err := s.Savepoint(context.Background(), 2, target); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "agg-1.channel") {
		t.Fatalf("savepoint of a checkpoint with a corrupt channel-state file: %v, want ErrCorrupt naming the file", err)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}
