package storage

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/vfs"
)

// startIncomplete writes one state file of checkpoint id and no metadata: a
// checkpoint in flight, or the leftover of a crash or an abort.
func startIncomplete(t *testing.T, s *FS, id checkpoint.ID) {
	t.Helper()
	if _, err := s.WriteFile(context.Background(), id, "1-0-keyed", func(w io.Writer) error {
		_, err := w.Write(content(id, "1-0-keyed"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// dirs lists the chk directories in the job dir, with "+" marking those
// holding _metadata.
func dirs(t *testing.T, s *FS) []string {
	t.Helper()
	ents, err := s.fs.ReadDir(s.JobDir())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if _, err := s.fs.Stat(filepath.Join(s.JobDir(), name, "_metadata")); err == nil {
			name += "+"
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func TestCompletedAscendingIgnoresForeignEntries(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		for _, id := range []checkpoint.ID{10, 2, 9} {
			writeCheckpoint(t, s, id)
		}
		startIncomplete(t, s, 11)
		for _, name := range []string{"chk-07", "chk-x", "notes", "chk--1"} {
			// A directory, as S3 has them: a prefix with an object.
			writeBytes(t, b.fs, filepath.Join(s.JobDir(), name, "x"), nil)
		}
		writeBytes(t, b.fs, filepath.Join(s.JobDir(), "chk-12"), nil)
		ids, err := s.Completed()
		if err != nil || !slices.Equal(ids, []checkpoint.ID{2, 9, 10}) {
			t.Fatalf("Completed = %v, %v; want [2 9 10]", ids, err)
		}
	})
}

func TestRetain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		startIncomplete(t, s, 1) // aborted long ago
		writeCheckpoint(t, s, 2)
		writeCheckpoint(t, s, 3)
		startIncomplete(t, s, 4) // subsumed by 5
		writeCheckpoint(t, s, 5)
		writeCheckpoint(t, s, 6)
		startIncomplete(t, s, 7) // in flight
		startIncomplete(t, s, 8) // in flight

		removed, err := s.Retain(2)
		if err != nil || !slices.Equal(removed, []checkpoint.ID{1, 2, 3, 4}) {
			t.Fatalf("Retain(2) = %v, %v; want [1 2 3 4]", removed, err)
		}
		want := []string{"chk-5+", "chk-6+", "chk-7", "chk-8"}
		if got := dirs(t, s); !slices.Equal(got, want) {
			t.Fatalf("after Retain(2): %q, want %q", got, want)
		}

		removed, err = s.Retain(2)
		if err != nil || len(removed) != 0 {
			t.Fatalf("second Retain(2) = %v, %v; want nothing removed", removed, err)
		}
		removed, err = s.Retain(1)
		if err != nil || !slices.Equal(removed, []checkpoint.ID{5}) {
			t.Fatalf("Retain(1) = %v, %v; want [5]", removed, err)
		}
		if got, want := dirs(t, s), []string{"chk-6+", "chk-7", "chk-8"}; !slices.Equal(got, want) {
			t.Fatalf("after Retain(1): %q, want %q", got, want)
		}
		if md, _, err := s.LoadLatest(context.Background()); err != nil || md.ID != 6 {
			t.Fatalf("LoadLatest after Retain = %v, %v", md, err)
		}
	})
}

func TestRetainWithoutCompletedKeepsEverything(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		startIncomplete(t, s, 1)
		removed, err := s.Retain(3)
		if err != nil || len(removed) != 0 {
			t.Fatalf("Retain = %v, %v", removed, err)
		}
		if got := dirs(t, s); !slices.Equal(got, []string{"chk-1"}) {
			t.Fatalf("after Retain: %q", got)
		}
		if _, err := s.Retain(0); err == nil {
			t.Fatal("Retain(0) succeeded")
		}
	})
}

func TestRetainReportsPartialProgress(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		fail := false
		s := b.open(t, WithFS(vfs.WithErrors(b.fs, vfs.InjectorFunc(func(op vfs.Op, p string) error {
			if fail && op == vfs.OpRemoveAll && filepath.Base(p) == "chk-2" {
				return syscall.EIO
			}
			return nil
		}))))
		for id := checkpoint.ID(1); id <= 4; id++ {
			writeCheckpoint(t, s, id)
		}
		fail = true
		removed, err := s.Retain(1)
		if !errors.Is(err, syscall.EIO) || !slices.Equal(removed, []checkpoint.ID{1}) {
			t.Fatalf("Retain = %v, %v; want [1] and EIO", removed, err)
		}
		// chk-2 lost its _metadata before the failed removal, so it is no
		// longer a checkpoint, and the next Retain cleans it up.
		fail = false
		if got := dirs(t, s); !slices.Equal(got, []string{"chk-2", "chk-3+", "chk-4+"}) {
			t.Fatalf("after failed Retain: %q", got)
		}
		removed, err = s.Retain(1)
		if err != nil || !slices.Equal(removed, []checkpoint.ID{2, 3}) {
			t.Fatalf("Retain again = %v, %v; want [2 3]", removed, err)
		}
	})
}

func TestDiscardLeavesNoFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		writeCheckpoint(t, s, 1)
		writeCheckpoint(t, s, 2)
		startIncomplete(t, s, 3)
		writeBytes(t, b.fs, filepath.Join(s.JobDir(), "chk-3", "_metadata.tmp"), []byte("torn"))
		for _, id := range []checkpoint.ID{2, 3, 99} {
			if err := s.Discard(id); err != nil {
				t.Fatalf("Discard(%d): %v", id, err)
			}
		}
		want := []string{"chk-1", "chk-1/1-0-keyed", "chk-1/1-1-keyed", "chk-1/_metadata"}
		if got := treeFS(t, b.fs, s.JobDir()); !slices.Equal(got, want) {
			t.Fatalf("after Discard: %q, want %q", got, want)
		}
	})
}

func TestDiscardRemovesMetadataFirst(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		rec := &vfs.Recorder{}
		s := b.open(t, WithFS(vfs.WithErrors(b.fs, rec)))
		writeCheckpoint(t, s, 1)
		rec.Reset()
		if err := s.Discard(1); err != nil {
			t.Fatal(err)
		}
		want := []string{"remove /chk-1/_metadata", "syncdir /chk-1", "removeall /chk-1"}
		if got := rec.Ops(s.JobDir()); !slices.Equal(got, want) {
			t.Fatalf("operations\n got %q\nwant %q", got, want)
		}
	})
}

func TestCleanIncomplete(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		startIncomplete(t, s, 1)
		writeCheckpoint(t, s, 2)
		startIncomplete(t, s, 3)
		if err := b.fs.MkdirAll(filepath.Join(s.JobDir(), "chk-4"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := s.CleanIncomplete(); err != nil {
			t.Fatal(err)
		}
		if got := dirs(t, s); !slices.Equal(got, []string{"chk-2+"}) {
			t.Fatalf("after CleanIncomplete: %q", got)
		}
	})
}

func TestRetainRegistered(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		startIncomplete(t, s, 1) // aborted long ago
		writeCheckpoint(t, s, 2)
		writeCheckpoint(t, s, 3) // written by a deposed JobManager, never registered
		writeCheckpoint(t, s, 4)
		writeCheckpoint(t, s, 5)
		writeCheckpoint(t, s, 6) // written, its registration in flight
		startIncomplete(t, s, 7) // in flight

		var unregistered []checkpoint.ID
		unregister := func(ids []checkpoint.ID) error {
			unregistered = append(unregistered, ids...)
			return nil
		}
		// Refused: nothing is removed, the pointers stay valid.
		refuse := func([]checkpoint.ID) error { return errors.New("etcd unavailable") }
		if removed, err := s.RetainRegistered(1, []checkpoint.ID{2, 4, 5}, refuse); err == nil || len(removed) != 0 {
			t.Fatalf("RetainRegistered with a refused unregister = %v, %v; want an error and nothing removed", removed, err)
		}
		want := []string{"chk-1", "chk-2+", "chk-3+", "chk-4+", "chk-5+", "chk-6+", "chk-7"}
		if got := dirs(t, s); !slices.Equal(got, want) {
			t.Fatalf("after a refused unregister: %q, want %q", got, want)
		}

		removed, err := s.RetainRegistered(2, []checkpoint.ID{2, 4, 5}, unregister)
		if err != nil || !slices.Equal(removed, []checkpoint.ID{1, 2, 3}) {
			t.Fatalf("RetainRegistered(2) = %v, %v; want [1 2 3]", removed, err)
		}
		if !slices.Equal(unregistered, []checkpoint.ID{2}) {
			t.Fatalf("unregistered %v, want [2]", unregistered)
		}
		want = []string{"chk-4+", "chk-5+", "chk-6+", "chk-7"}
		if got := dirs(t, s); !slices.Equal(got, want) {
			t.Fatalf("after RetainRegistered(2): %q, want %q", got, want)
		}
		if removed, err := s.RetainRegistered(1, nil, unregister); err != nil || len(removed) != 0 {
			t.Fatalf("RetainRegistered without registered checkpoints = %v, %v; want nothing removed", removed, err)
		}
	})
}
