package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

// A savepoint is a verified copy of a completed checkpoint that loads from
// wherever its folder is moved, with the same state bytes.
func TestSavepointCopiesAndRelocates(t *testing.T) {
	s := openStore(t)
	md := writeCheckpoint(t, s, 4)
	target := filepath.Join(t.TempDir(), "saves")
	dir, err := s.Savepoint(context.Background(), 4, target)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(target, SavepointPrefix+filepath.Base(s.JobDir())+"-4"); dir != want {
		t.Fatalf("savepoint at %s, want %s", dir, want)
	}
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	got, view, err := LoadPath(context.Background(), moved)
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
	again := t.TempDir()
	if _, err := s.Savepoint(context.Background(), 4, again); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Savepoint(context.Background(), 4, again); err == nil {
		t.Fatal("a second savepoint of checkpoint 4 into the same folder overwrote the first")
	}
}

// A corrupt checkpoint gives no savepoint, and no partial folder.
func TestSavepointOfCorruptCheckpoint(t *testing.T) {
	s := openStore(t)
	md := writeCheckpoint(t, s, 2)
	var f checkpoint.StateFile
	for _, op := range md.Operators {
		for _, st := range op.Subtasks {
			if st.State.Keyed != nil {
				f = st.State.Keyed.File
			}
		}
	}
	flipByte(t, filepath.Join(s.JobDir(), f.Path), 0)
	target := t.TempDir()
	if _, err := s.Savepoint(context.Background(), 2, target); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("savepoint of a corrupt checkpoint: %v, want ErrCorrupt", err)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}
