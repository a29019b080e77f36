package runtime

import (
	"context"
	"io"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
)

// storeWriters hands tasks a StateWriter bound to one checkpoint of the
// job's storage.
type storeWriters struct{ fs *storage.FS }

func (s *storeWriters) ForCheckpoint(id checkpoint.ID) dataflow.StateWriter {
	return chkWriter{fs: s.fs, id: id}
}

type chkWriter struct {
	fs *storage.FS
	id checkpoint.ID
}

func (w chkWriter) WriteFile(ctx context.Context, name string, write func(io.Writer) error) (checkpoint.StateFile, error) {
	return w.fs.WriteFile(ctx, w.id, name, write)
}
