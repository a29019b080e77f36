package lsm

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
)

// storeBlocks opens h's store read-only under dir and returns its
// canonical blocks.
func storeBlocks(t *testing.T, h *checkpoint.IncrementalKeyedStateHandle, files FileSource, dir string) ([]byte, []checkpoint.KeyGroupOffset) {
	t.Helper()
	s, err := OpenStore(t.Context(), IncrementalSource{Handle: h, Files: files}, Options{Dir: dir, Name: "read"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Dir(), dir) || s.KeyGroups() != (keygroup.Range{Start: h.KeyGroupStart, End: h.KeyGroupEnd}) {
		t.Errorf("store in %s over %s, want under %s over [%d, %d)", s.Dir(), s.KeyGroups(), dir, h.KeyGroupStart, h.KeyGroupEnd)
	}
	var buf bytes.Buffer
	offs, err := s.WriteBlocks(t.Context(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left %s behind: %v", s.Dir(), err)
	}
	return buf.Bytes(), offs
}

// TestStoreWritesWhatAFullSnapshotWrites: the store of the last of several
// incremental checkpoints (later ones overwrite, clear and add keys, so the
// store has several SSTs and shadowed entries) reads back as exactly the
// canonical bytes a full snapshot of the same backend writes, timers
// included; and so does each subtask's store of a job at parallelism 2.
func TestStoreWritesWhatAFullSnapshotWrites(t *testing.T) {
	t.Run("increments", func(t *testing.T) {
		fs := newStorage(t)
		f := newLSM(t, fullRange)
		f.register(t)
		b := f.b.(*Backend[int])
		var h *checkpoint.IncrementalKeyedStateHandle
		for round := 1; round <= 4; round++ {
			f.fill(0, 500, round)
			for k := round; k < 500; k += 7 { // clears shadow entries of older files
				f.set(k)
				f.val.Clear()
				f.mp.Clear()
				f.list.Clear()
			}
			f.fill(500*round, 500*round+50, round) // keys new in this round
			h = incCheckpoint(t, f, fs, checkpoint.ID(round))
			if err := b.CheckpointComplete(checkpoint.ID(round)); err != nil {
				t.Fatal(err)
			}
		}
		if len(h.Shared) < 2 {
			t.Fatalf("the last checkpoint references %d SSTs; want several increments", len(h.Shared))
		}
		want := snapshotBytes(t, f.b)
		got, offs := storeBlocks(t, h, fs, t.TempDir())
		if !bytes.Equal(got, want.Data) || !slices.Equal(offs, want.KeyGroups) {
			t.Fatalf("the store's canonical blocks (%d bytes, %d groups) differ from a full snapshot's (%d bytes, %d groups)", len(got), len(offs), len(want.Data), len(want.KeyGroups))
		}
	})
	t.Run("subtasks", func(t *testing.T) {
		fs := newStorage(t)
		for i := range 2 {
			kgs := keygroup.RangeFor(testMaxP, 2, i)
			f := newLSM(t, kgs)
			f.register(t)
			n := 0
			for _, k := range keysUpTo(800) {
				if kgs.Contains(f.kg(k)) {
					f.fill(k, k+1, 1)
					n++
				}
			}
			h := incCheckpoint(t, f, fs, 1)
			want := snapshotBytes(t, f.b)
			got, offs := storeBlocks(t, h, fs, t.TempDir())
			if n == 0 || !bytes.Equal(got, want.Data) || !slices.Equal(offs, want.KeyGroups) {
				t.Fatalf("subtask %d (%s, %d keys): the store's canonical blocks differ from a full snapshot's", i, kgs, n)
			}
		}
	})
}

func TestOpenStoreFailures(t *testing.T) {
	fs := newStorage(t)
	f := newLSM(t, fullRange)
	f.register(t)
	f.fill(0, 100, 1)
	h := incCheckpoint(t, f, fs, 1)
	open := func(h *checkpoint.IncrementalKeyedStateHandle) error {
		dir := t.TempDir()
		s, err := OpenStore(t.Context(), IncrementalSource{Handle: h, Files: fs}, Options{Dir: dir})
		if err == nil {
			s.Close()
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("a failed open left %d entries in %s", len(ents), dir)
		}
		return err
	}
	t.Run("bad-catalogue", func(t *testing.T) {
		bad := *h
		bad.States = append(slices.Clone(h.States), h.States[0])
		if err := open(&bad); !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("a catalogue naming a state twice: err = %v", err)
		}
		bad.States, bad.KeyGroupEnd = h.States, -1
		if err := open(&bad); !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("a negative range: err = %v", err)
		}
	})
	t.Run("missing-file", func(t *testing.T) {
		sst := h.Shared[0]
		path := filepath.Join(fs.JobDir(), sst.StateFile().Path)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(path, b, 0o644)
		if err := open(h); err == nil || !strings.Contains(err.Error(), sst.Name) {
			t.Fatalf("a missing SST: err = %v, want one naming %s", err, sst.Name)
		}
	})
}

// BenchmarkReadStore is what reading an incremental checkpoint costs a
// tool (state export, stateproc) over writing a full snapshot of the live
// store: "snapshot" writes the canonical blocks of 200k keys (every state
// kind, a timer each) from the running store; "store" fetches the store of
// an incremental checkpoint of the same state from local checkpoint
// storage, opens it read-only and writes the same blocks. Both report the
// canonical bytes written per second.
func BenchmarkReadStore(b *testing.B) {
	const keys = 200_000
	fs, err := storage.Open(b.TempDir(), "job")
	if err != nil {
		b.Fatal(err)
	}
	f := newLSM(b, fullRange, func(o *Options) { o.MemtableSize, o.BlockCacheSize, o.WriteBufferSize = 0, 0, 0 })
	f.register(b)
	f.fill(0, keys, 1)
	bk := f.b.(*Backend[int])
	s, err := bk.IncrementalSnapshot(1)
	if err != nil {
		b.Fatal(err)
	}
	h, err := s.Write(b.Context(), chkWriter{fs, 1}, "op")
	s.Release()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("snapshot", func(b *testing.B) {
		var n int64
		for range b.N {
			snap := f.b.Snapshot()
			cw := &countWriter{}
			if _, err := snap.WriteBlocks(cw); err != nil {
				b.Fatal(err)
			}
			snap.Release()
			n = cw.n
		}
		b.SetBytes(n)
	})
	b.Run("store", func(b *testing.B) {
		var n int64
		dir := b.TempDir()
		for range b.N {
			st, err := OpenStore(b.Context(), IncrementalSource{Handle: h, Files: fs}, Options{Dir: dir})
			if err != nil {
				b.Fatal(err)
			}
			cw := &countWriter{}
			if _, err := st.WriteBlocks(b.Context(), cw); err != nil {
				b.Fatal(err)
			}
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			n = cw.n
		}
		b.SetBytes(n)
	})
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
