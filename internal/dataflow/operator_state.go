package dataflow

import (
	"context"
	"io"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// FileSource reads a checkpoint's state files, checking each against its
// size and CRC32C (storage.FS).
type FileSource interface {
	OpenFile(ctx context.Context, f checkpoint.StateFile) (io.ReadCloser, error)
}

// SharedStateWriter is the StateWriter of incremental snapshots: it also
// writes files into the job's shared area.
type SharedStateWriter interface {
	StateWriter
	WriteSharedFile(ctx context.Context, name string, write func(w io.Writer) error) (checkpoint.StateFile, error)
}

// KindSnapshotter is implemented by operators whose snapshot depends on
// the checkpoint's kind: the LSM backend snapshots incrementally only for
// periodic checkpoints, canonically for savepoints and final checkpoints.
type KindSnapshotter interface {
	SnapshotStateKind(ctx context.Context, id checkpoint.ID, ts time.Time, kind checkpoint.Kind) (AsyncSnapshot, error)
}

// JobStorage is what an operator may do with the job's own checkpoint
// storage while it runs: write a file into the shared area, whose life
// the checkpoints referencing it decide (checkpoint.SharedRefs), and read
// back the files it wrote. storage.FS implements it.
type JobStorage interface {
	WriteSharedFile(ctx context.Context, name string, write func(w io.Writer) error) (checkpoint.StateFile, error)
	FileSource
}
