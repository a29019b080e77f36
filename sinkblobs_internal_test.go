package weir

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
)

// carryTxn is the handle of carrySink: records spilled to a blob.
type carryTxn struct {
	ID   int64
	Recs []int64
	Blob string
}

// carrySink spills every non-empty transaction at pre-commit and, at
// commit, appends its records (read back from the blob) to committed.
type carrySink struct {
	blobs     TransactionBlobs
	seq       int64
	committed []int64
}

func (s *carrySink) SetTransactionBlobs(b TransactionBlobs)                   { s.blobs = b }
func (s *carrySink) Open(context.Context, *RuntimeContext, []*carryTxn) error { return nil }
func (s *carrySink) Begin(context.Context) (*carryTxn, error) {
	s.seq++
	return &carryTxn{ID: s.seq}, nil
}
func (s *carrySink) Write(_ context.Context, t *carryTxn, b []int64) error {
	t.Recs = append(t.Recs, b...)
	return nil
}
func (s *carrySink) PreCommit(ctx context.Context, t *carryTxn) error {
	if len(t.Recs) == 0 {
		return nil
	}
	ref, err := s.blobs.Create(ctx, func(w io.Writer) error {
		var b []byte
		for _, v := range t.Recs {
			b = binary.AppendVarint(b, v)
		}
		_, err := w.Write(b)
		return err
	})
	t.Blob, t.Recs = string(ref), nil
	return err
}
func (s *carrySink) Commit(ctx context.Context, t *carryTxn) error {
	if t.Blob == "" {
		return nil
	}
	r, err := s.blobs.Open(ctx, BlobRef(t.Blob))
	if err != nil {
		return err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	for err == nil && len(b) > 0 {
		v, n := binary.Varint(b)
		s.committed, b = append(s.committed, v), b[n:]
	}
	return err
}
func (s *carrySink) Abort(context.Context, *carryTxn) error { return nil }
func (s *carrySink) Close(context.Context) error            { return nil }

// A transaction still pending at the next checkpoint (its own checkpoint
// not yet complete, or aborted) is recorded there again, with its blob:
// the next snapshot lists the blobs of both pre-commits. A task killed
// before the commit is restored from that state and commits both from
// their blobs; the running one commits both on the notification.
func TestTwoPhaseBlobsCarriedUntilCommitted(t *testing.T) {
	ctx := context.Background()
	fs, err := storage.Open(t.TempDir(), "job")
	if err != nil {
		t.Fatal(err)
	}
	open := func(sink *carrySink, restored *dataflow.RestoredState) *twoPhaseOp[int64, *carryTxn] {
		op := &twoPhaseOp[int64, *carryTxn]{sink: sink}
		oc := &dataflow.OperatorContext{UID: "sink", Name: "Sink", Parallelism: 1, MaxParallelism: 8,
			Logger: slog.New(slog.DiscardHandler), Now: time.Now, Storage: fs, Restored: restored}
		if err := op.Open(ctx, oc); err != nil {
			t.Fatal(err)
		}
		return op
	}
	sink := &carrySink{}
	op := open(sink, nil)
	var last checkpoint.OperatorSubtaskState
	snapshot := func(id int64, recs ...int64) []string {
		t.Helper()
		if err := op.Push(ctx, recs, nil); err != nil {
			t.Fatal(err)
		}
		a, err := op.SnapshotState(ctx, checkpoint.ID(id), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		st, err := a(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, f := range st.Blobs {
			paths = append(paths, f.Path)
		}
		last = st
		return paths
	}
	b1 := snapshot(1, 1, 2, 3)
	if len(b1) != 1 || !strings.HasPrefix(b1[0], "shared/blob-1-") {
		t.Fatalf("checkpoint 1 lists blobs %v, want one shared/blob-1-…", b1)
	}
	b2 := snapshot(2, 4)
	if len(b2) != 2 || b2[0] != b1[0] || !strings.HasPrefix(b2[1], "shared/blob-2-") {
		t.Fatalf("checkpoint 2 lists blobs %v, want %s and a blob of checkpoint 2", b2, b1[0])
	}
	if _, err := sink.blobs.Create(ctx, func(io.Writer) error { return nil }); err == nil {
		t.Fatal("Create outside PreCommit succeeded")
	}

	// Killed between pre-commit and commit: a new instance restores
	// checkpoint 2 and commits both transactions from their blobs.
	restoredSink := &carrySink{}
	r := open(restoredSink, &dataflow.RestoredState{Checkpoint: 2, Operator: last.Operator, Blobs: last.Blobs, Files: fs})
	defer r.Close(ctx)
	if !slices.Equal(restoredSink.committed, []int64{1, 2, 3, 4}) {
		t.Fatalf("restore committed %v, want [1 2 3 4]", restoredSink.committed)
	}

	// The running instance commits both on checkpoint 2's completion and
	// then no longer lists them.
	if err := op.NotifyCheckpointComplete(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sink.committed, []int64{1, 2, 3, 4}) {
		t.Fatalf("commit on completion gave %v, want [1 2 3 4]", sink.committed)
	}
	if b3 := snapshot(3); len(b3) != 0 {
		t.Fatalf("checkpoint 3, after both commits, lists blobs %v", b3)
	}
	if err := op.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
