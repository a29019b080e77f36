package lsm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// chkWriter binds a storage to one checkpoint, as the runtime does.
type chkWriter struct {
	fs *storage.FS
	id checkpoint.ID
}

func (w chkWriter) WriteFile(ctx context.Context, name string, write func(io.Writer) error) (checkpoint.StateFile, error) {
	return w.fs.WriteFile(ctx, w.id, name, write)
}

func (w chkWriter) WriteSharedFile(ctx context.Context, name string, write func(io.Writer) error) (checkpoint.StateFile, error) {
	return w.fs.WriteSharedFile(ctx, name, write)
}

func newStorage(t *testing.T) *storage.FS {
	t.Helper()
	fs, err := storage.Open(t.TempDir(), "job")
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// fill writes every state of keys [from, to) with values derived from
// round, and a timer per key.
func (f *fixture) fill(from, to, round int) {
	for k := from; k < to; k++ {
		f.set(k)
		f.val.Update(int64(k*10 + round))
		f.list.Add(fmt.Sprintf("r%d-%d", round, k))
		f.mp.Put(fmt.Sprintf("m%d", round), k)
		f.sum.Add(int64(k))
		f.b.Timers().Register(int64(1000 + k))
		f.b.EventTimers().Register(int64(5000 - k%50))
	}
}

// incCheckpoint takes incremental checkpoint id of f's lsm backend.
func incCheckpoint(t *testing.T, f *fixture, fs *storage.FS, id checkpoint.ID) *checkpoint.IncrementalKeyedStateHandle {
	t.Helper()
	b := f.b.(*Backend[int])
	s, err := b.IncrementalSnapshot(id)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	h, err := s.Write(context.Background(), chkWriter{fs, id}, fmt.Sprintf("op-%d", b.kgs.Start))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func restoreInc(t *testing.T, kgs keygroup.Range, fs *storage.FS, own bool, opts []func(*Options), hs ...*checkpoint.IncrementalKeyedStateHandle) (*fixture, RestoreStats) {
	t.Helper()
	f := newLSM(t, kgs, opts...)
	var srcs []IncrementalSource
	for _, h := range hs {
		srcs = append(srcs, IncrementalSource{Handle: h, Files: fs})
	}
	st, err := f.b.(*Backend[int]).RestoreIncremental(context.Background(), srcs, own)
	if err != nil {
		t.Fatal(err)
	}
	f.register(t)
	if u := f.b.UnrestoredStates(); len(u) != 0 {
		t.Fatalf("unrestored states %v", u)
	}
	return f, st
}

func keysUpTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func TestIncrementalCheckpointUploadsOnlyNewFiles(t *testing.T) {
	fs := newStorage(t)
	f := newLSM(t, fullRange)
	f.register(t)
	f.fill(0, 2000, 1)
	h1 := incCheckpoint(t, f, fs, 1)
	if h1.UploadedSize != h1.FullSize || len(h1.Shared) == 0 {
		t.Fatalf("first checkpoint uploaded %d of %d bytes with %d SSTs; want everything, at least one SST", h1.UploadedSize, h1.FullSize, len(h1.Shared))
	}
	if err := f.b.(*Backend[int]).CheckpointComplete(1); err != nil {
		t.Fatal(err)
	}
	f.fill(0, 20, 2) // 1% of the keys change
	h2 := incCheckpoint(t, f, fs, 2)
	var sharedUp int64
	reused := 0
	for _, r := range h2.Shared {
		for _, o := range h1.Shared {
			if o == r {
				reused++
			}
		}
	}
	for _, r := range h2.Shared {
		sharedUp += r.Size
	}
	if reused != len(h1.Shared) {
		t.Fatalf("second checkpoint references %d of the first one's %d SSTs; want all", reused, len(h1.Shared))
	}
	if h2.UploadedSize >= h2.FullSize/2 {
		t.Fatalf("second checkpoint uploaded %d of %d bytes; want only the new SST and the small files", h2.UploadedSize, h2.FullSize)
	}
	want := f.dump(keysUpTo(2000))
	g, st := restoreInc(t, fullRange, fs, true, nil, h2)
	if got := g.dump(keysUpTo(2000)); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored state differs")
	}
	if st.Downloaded != sharedUp {
		t.Fatalf("restore downloaded %d bytes of SSTs, the handle has %d", st.Downloaded, sharedUp)
	}
	// Restored ties fire in encoded-key order, not registration order:
	// compare with a heap backend restored from a full snapshot.
	ref := restore(t, heapMaker, fullRange, snapshotBytes(t, f.b))
	if got, want := firedTimers(g, 1e9), firedTimers(f, 1e9); !reflect.DeepEqual(got, want) {
		t.Fatalf("timers differ: %v vs %v", got, want)
	}
	if got, want := firedEvents(g, 1e9), firedEvents(ref, 1e9); len(want) != 2000 || !reflect.DeepEqual(got, want) {
		t.Fatalf("event timers differ (%d restored, %d expected)", len(got), len(want))
	}
	// The restored store references the restored files still live (a
	// compaction after opening may have replaced them), not new copies.
	h3 := incCheckpoint(t, g, fs, 3)
	for _, r := range h3.Shared {
		for _, o := range h2.Shared {
			if o.Local == r.Local && o != r {
				t.Fatalf("restored file %s uploaded again as %s", o.Name, r.Name)
			}
		}
	}
}

// TestIncrementalRescale restores 2 -> 3 and 3 -> 2 subtasks by ingest and
// range delete, and compares with the heap backend restored from canonical
// snapshots of the same state.
func TestIncrementalRescale(t *testing.T) {
	for _, c := range []struct{ from, to int }{{2, 3}, {3, 2}, {3, 1}, {1, 4}, {4, 1}} {
		t.Run(fmt.Sprintf("%d-to-%d", c.from, c.to), func(t *testing.T) {
			fs := newStorage(t)
			keys := keysUpTo(600)
			var hs []*checkpoint.IncrementalKeyedStateHandle
			ref := newHeap(t, fullRange)
			ref.register(t)
			ref.fill(0, 600, 1)
			ref.fill(0, 300, 2)
			for i := range c.from {
				kgs := keygroup.RangeFor(testMaxP, c.from, i)
				f := newLSM(t, kgs)
				f.register(t)
				for _, k := range keys {
					if kgs.Contains(f.kg(k)) {
						f.fill(k, k+1, 1)
						if k < 300 {
							f.fill(k, k+1, 2)
						}
					}
				}
				hs = append(hs, incCheckpoint(t, f, fs, 1))
			}
			for i := range c.to {
				kgs := keygroup.RangeFor(testMaxP, c.to, i)
				g, _ := restoreInc(t, kgs, fs, true, nil, hs...)
				want := map[int]view{}
				for _, k := range keys {
					if kgs.Contains(ref.kg(k)) {
						want[k] = ref.read(k)
					}
				}
				if got := g.dump(keys); !reflect.DeepEqual(got, want) {
					t.Fatalf("subtask %d (%s): restored state differs from the reference", i, kgs)
				}
				// Nothing outside the range survives: a canonical snapshot
				// of the restored store equals the heap's of its range.
				h := newHeap(t, kgs)
				if err := h.b.Restore(t.Context(), []state.RestoreSource{snapshotBytes(t, ref.b)}); err != nil {
					t.Fatal(err)
				}
				h.register(t)
				if a, b := snapshotBytes(t, g.b), snapshotBytes(t, h.b); !sameSource(a, b) {
					t.Fatalf("subtask %d (%s): canonical snapshot of the rescaled store differs from the heap backend's", i, kgs)
				}
			}
		})
	}
}

func TestIncrementalLocalRecoveryDownloadsNothing(t *testing.T) {
	fs := newStorage(t)
	local := filepath.Join(t.TempDir(), "local")
	withLocal := []func(*Options){func(o *Options) { o.LocalRecoveryDir = local }}
	f := newLSM(t, fullRange, withLocal...)
	f.register(t)
	f.fill(0, 500, 1)
	h := incCheckpoint(t, f, fs, 1)
	if err := f.b.(*Backend[int]).CheckpointComplete(1); err != nil {
		t.Fatal(err)
	}
	g, st := restoreInc(t, fullRange, fs, true, withLocal, h)
	if st.Downloaded != 0 || st.Reused == 0 {
		t.Fatalf("restore downloaded %d bytes and reused %d; want nothing downloaded", st.Downloaded, st.Reused)
	}
	if !reflect.DeepEqual(g.dump(keysUpTo(500)), f.dump(keysUpTo(500))) {
		t.Fatal("restored state differs")
	}
	// A damaged local copy is not used.
	ents, _ := os.ReadDir(local)
	if len(ents) == 0 {
		t.Fatal("no local copy kept")
	}
	corrupt(t, filepath.Join(local, ents[0].Name()))
	_, st = restoreInc(t, fullRange, fs, true, withLocal, h)
	if st.Downloaded == 0 {
		t.Fatal("a damaged local copy was used")
	}
}

func TestIncrementalRestoreDetectsCorruptSharedFile(t *testing.T) {
	fs := newStorage(t)
	f := newLSM(t, fullRange)
	f.register(t)
	f.fill(0, 500, 1)
	h := incCheckpoint(t, f, fs, 1)
	victim := h.Shared[0].Name
	corrupt(t, filepath.Join(fs.JobDir(), "shared", victim))
	g := newLSM(t, fullRange)
	_, err := g.b.(*Backend[int]).RestoreIncremental(context.Background(), []IncrementalSource{{Handle: h, Files: fs}}, true)
	if !errors.Is(err, storage.ErrCorrupt) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("restore from a damaged shared file: %v; want ErrCorrupt naming %s", err, victim)
	}
}

func corrupt(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
