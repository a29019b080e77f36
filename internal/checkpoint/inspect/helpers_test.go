package inspect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/twophase"
)

const testJob = "job"

func mustCodec[T any](t testing.TB) codec.Codec[T] {
	t.Helper()
	c, err := codec.For[T]()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeKeyed writes the backend's snapshot as state file name of checkpoint
// id and returns its handle.
func writeKeyed(t *testing.T, s *storage.FS, id checkpoint.ID, name string, b *state.KeyedBackend[int64]) *checkpoint.KeyedStateHandle {
	t.Helper()
	snap := b.Snapshot()
	defer snap.Release()
	var offs []checkpoint.KeyGroupOffset
	f, err := s.WriteFile(context.Background(), id, name, func(w io.Writer) (err error) {
		offs, err = snap.WriteBlocks(w)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return &checkpoint.KeyedStateHandle{File: f, KeyGroups: offs}
}

// writeRaw writes bytes as state file name of checkpoint id.
func writeRaw(t *testing.T, s *storage.FS, id checkpoint.ID, name string, data []byte) checkpoint.StateFile {
	t.Helper()
	f, err := s.WriteFile(context.Background(), id, name, func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// commit writes the metadata of checkpoint id with ops and returns its
// chk-<id> directory.
func commit(t *testing.T, s *storage.FS, id checkpoint.ID, kind checkpoint.Kind, ops ...checkpoint.OperatorState) string {
	t.Helper()
	md := &checkpoint.Metadata{JobID: testJob, ID: id, Kind: kind, Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Operators: ops}
	if _, err := s.WriteMetadata(context.Background(), md); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(s.JobDir(), fmt.Sprintf("chk-%d", id))
}

func openStorage(t *testing.T) *storage.FS {
	t.Helper()
	s, err := storage.Open(t.TempDir(), testJob)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bytesCodec is a twophase.Codec for raw handles, used to write 2PC state.
type bytesCodec struct{}

func (bytesCodec) Encode(b []byte) ([]byte, error) { return b, nil }
func (bytesCodec) Decode(b []byte) ([]byte, error) { return b, nil }

func encode2PC(t *testing.T, s twophase.State[[]byte]) []byte {
	t.Helper()
	b, err := twophase.EncodeState(s, bytesCodec{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
