package weir

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
)

// BlobRef names a blob of TransactionBlobs. A sink keeps it in its
// transaction handle, as a string field.
type BlobRef string

// TransactionBlobs keeps the payload of a TwoPhaseCommitSink's
// transactions that is too large for the handle (which is stored inline
// in the checkpoint's metadata) in the job's checkpoint storage. A blob
// is written while its transaction is pre-committed and lies in the
// job's shared area, where it stays as long as a retained checkpoint
// holds the transaction: the engine records the blobs of every pending
// transaction beside the handles, and the shared-area reference counting
// of incremental checkpoints decides when to delete them. A savepoint
// copies them, so it stays self-contained. Like the sink's other calls,
// its methods are called from the task's goroutine only.
type TransactionBlobs interface {
	// Create writes a new blob through write and returns its reference,
	// for the handle. It may be called only from PreCommit: the blob
	// belongs to the transaction being pre-committed. It fails with
	// ErrNoBlobStorage when the job has no checkpoint storage for blobs
	// (none at all, or a WEAKLY_CONSISTENT job, whose per-task snapshots
	// the shared area's reference counting does not cover); a sink may
	// then keep the payload in the handle.
	Create(ctx context.Context, write func(w io.Writer) error) (BlobRef, error)
	// Open streams a blob back: one this instance created, or one a
	// restored checkpoint holds (during Open, and the Commit and Abort
	// of the restored transactions). The reader checks the blob's size
	// and checksum as it reads, so what it returned is provisional until
	// it returns io.EOF; a damaged blob fails the read instead.
	Open(ctx context.Context, ref BlobRef) (io.ReadCloser, error)
}

// BlobSink is an optional interface of a TwoPhaseCommitSink that keeps
// transaction payloads in checkpoint storage (TransactionBlobs).
// SetTransactionBlobs is called once, before Open.
type BlobSink interface {
	SetTransactionBlobs(b TransactionBlobs)
}

// ErrNoBlobStorage is wrapped by TransactionBlobs.Create when the job
// has no checkpoint storage to write blobs to.
var ErrNoBlobStorage = errors.New("no checkpoint storage for transaction blobs")

// txnBlobs is a two-phase-commit operator's TransactionBlobs. It knows
// the file of every blob it may open (restored ones with the restore's
// storage) and which blobs the pre-commit of each pending checkpoint
// created, so that a snapshot lists the blobs of every transaction it
// records.
type txnBlobs struct {
	storage dataflow.JobStorage
	files   map[BlobRef]blobFile
	// writing is the checkpoint being pre-committed, 0 outside PreCommit;
	// written collects what its pre-commit created.
	writing checkpoint.ID
	written []checkpoint.StateFile
	// pending are the blobs of each pending pre-commit, by checkpoint.
	pending map[checkpoint.ID][]checkpoint.StateFile
}

type blobFile struct {
	file checkpoint.StateFile
	src  dataflow.FileSource
}

func newTxnBlobs(storage dataflow.JobStorage) *txnBlobs {
	return &txnBlobs{storage: storage, files: map[BlobRef]blobFile{}, pending: map[checkpoint.ID][]checkpoint.StateFile{}}
}

// restored makes the blobs of a restored checkpoint readable.
func (b *txnBlobs) restored(rs *dataflow.RestoredState) {
	for _, f := range rs.Blobs {
		b.files[BlobRef(path.Base(f.Path))] = blobFile{file: f, src: rs.Files}
	}
}

// forgetRestored drops the restored blobs once their transactions were
// committed or aborted: no new checkpoint records them (the tracker does
// not carry restored transactions).
func (b *txnBlobs) forgetRestored(rs *dataflow.RestoredState) {
	for _, f := range rs.Blobs {
		delete(b.files, BlobRef(path.Base(f.Path)))
	}
}

func (b *txnBlobs) Create(ctx context.Context, write func(w io.Writer) error) (BlobRef, error) {
	if b.writing == 0 {
		return "", errors.New("create transaction blob: only PreCommit may create blobs")
	}
	if b.storage == nil {
		return "", fmt.Errorf("create transaction blob: %w", ErrNoBlobStorage)
	}
	var u [8]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", fmt.Errorf("create transaction blob: %w", err)
	}
	name := checkpoint.BlobName(b.writing, hex.EncodeToString(u[:]))
	f, err := b.storage.WriteSharedFile(ctx, name, write)
	if err != nil {
		return "", fmt.Errorf("create transaction blob: %w", err)
	}
	ref := BlobRef(name)
	b.files[ref] = blobFile{file: f, src: b.storage}
	b.written = append(b.written, f)
	return ref, nil
}

func (b *txnBlobs) Open(ctx context.Context, ref BlobRef) (io.ReadCloser, error) {
	bf, ok := b.files[ref]
	if !ok || bf.src == nil {
		return nil, fmt.Errorf("open transaction blob %q: not a blob of this sink's pending or restored transactions", ref)
	}
	return bf.src.OpenFile(ctx, bf.file)
}

// preCommitting brackets a sink's PreCommit for checkpoint id: the blobs
// it creates belong to id.
func (b *txnBlobs) preCommitting(id checkpoint.ID) {
	b.writing, b.written = id, nil
}

func (b *txnBlobs) preCommitted() {
	if len(b.written) > 0 {
		b.pending[b.writing] = b.written
	}
	b.writing, b.written = 0, nil
}

// of lists the blobs of the pending pre-commits ids, for a snapshot.
func (b *txnBlobs) of(ids []checkpoint.ID) []checkpoint.StateFile {
	var out []checkpoint.StateFile
	for _, id := range ids {
		out = append(out, b.pending[id]...)
	}
	return out
}

// committed forgets the blobs of the pre-commits up to id: their
// transactions are committed, and only the retained checkpoints that
// hold them still reference the files.
func (b *txnBlobs) committed(id checkpoint.ID) {
	for pid, files := range b.pending {
		if pid > id {
			continue
		}
		for _, f := range files {
			delete(b.files, BlobRef(path.Base(f.Path)))
		}
		delete(b.pending, pid)
	}
}
