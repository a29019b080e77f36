package runtime

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/registry"
	"github.com/weirstream/weir/internal/checkpoint/storage"
)

// A sweep while tasks run spares the transaction blobs of checkpoints
// newer than the newest completed one: a task may hold their transaction
// pending (its checkpoint was aborted) and record the blob in its next
// checkpoint. Older unreferenced blobs go, and once no task runs (the
// job's end) the spared ones too.
func TestSweepSparesBlobsOfNewerCheckpoints(t *testing.T) {
	ctx := context.Background()
	store, err := storage.Open(t.TempDir(), "job")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string) {
		if _, err := store.WriteSharedFile(ctx, name, func(w io.Writer) error { _, err := w.Write([]byte(name)); return err }); err != nil {
			t.Fatal(err)
		}
	}
	kept, old, fresh, sst := checkpoint.BlobName(3, "a"), checkpoint.BlobName(4, "b"), checkpoint.BlobName(6, "c"), checkpoint.SharedName("0a0b", "1.sst")
	for _, n := range []string{kept, old, fresh, sst} {
		write(n)
	}
	jm := &JobMaster{store: store, log: slog.New(slog.DiscardHandler)}
	jm.shared = sharedFiles{reg: registry.New(), persisting: map[checkpoint.ID]*checkpoint.Metadata{}, dirty: true}
	jm.shared.reg.Register(5, []string{kept})
	listed := func() []string {
		l, err := store.ListShared()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	jm.sweepSharedLive(true)
	if got, want := listed(), []string{kept, fresh}; !slices.Equal(got, sortedCopy(want)) {
		t.Fatalf("after a live sweep the shared area holds %v, want %v", got, sortedCopy(want))
	}
	if !jm.shared.dirty {
		t.Fatal("a sweep that spared a blob left the area clean: the next sweep would skip it")
	}
	jm.sweepShared()
	if got := listed(); !slices.Equal(got, []string{kept}) {
		t.Fatalf("after the job's end the shared area holds %v, want only %s", got, kept)
	}
	if jm.shared.dirty {
		t.Fatal("the area is still dirty after a full sweep")
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
