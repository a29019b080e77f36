package lsm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/state"
)

// Incremental checkpoints (state.backend.incremental), in two parts as
// every snapshot:
//
//   - IncrementalSnapshot, on the task goroutine, flushes the memtable (the
//     write-ahead log is off, so only SSTs hold state) and takes a Pebble
//     checkpoint into <store>/chk-<n>: the live SSTs hard-linked, MANIFEST
//     and OPTIONS copied. Later compactions cannot delete linked files.
//   - Write, on the writer goroutine, uploads the SSTs that no completed
//     checkpoint of this store (or the one it was restored from) holds to
//     the job's shared area under checkpoint.SharedName, and the small
//     files as private files of the checkpoint.
//
// Which files may be skipped is learnt only from completed checkpoints
// (CheckpointComplete): a file uploaded for a checkpoint that failed may be
// deleted by the JobManager at any time (see internal/checkpoint/registry).

// IncrementalWriter writes the files of one checkpoint: private files into
// its folder, shared files into the job's shared area.
type IncrementalWriter interface {
	WriteFile(ctx context.Context, name string, write func(w io.Writer) error) (checkpoint.StateFile, error)
	WriteSharedFile(ctx context.Context, name string, write func(w io.Writer) error) (checkpoint.StateFile, error)
}

// incState is the bookkeeping of incremental checkpoints. The task
// goroutine (snapshot, notifications) and writer goroutines (Write) share
// it, hence the lock; it is taken per file, never per record.
type incState struct {
	mu sync.Mutex
	// confirmed maps a local SST name to its upload, for files that a
	// completed checkpoint references: those need no upload.
	confirmed map[string]checkpoint.SharedFileRef
	// taken maps an in-flight checkpoint to the files it references, set
	// once its Write finished.
	taken map[checkpoint.ID][]checkpoint.SharedFileRef
	// completed is the newest completed checkpoint whose local copy is
	// kept (local recovery), 0 if none.
	completed checkpoint.ID
}

func (s *incState) init() {
	s.confirmed = map[string]checkpoint.SharedFileRef{}
	s.taken = map[checkpoint.ID][]checkpoint.SharedFileRef{}
}

// newStoreID returns a random id that names this store's files in the
// shared area.
func newStoreID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lsm state backend: store id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// StoreID is the store's random id, part of its shared files' names.
func (b *Backend[K]) StoreID() string { return b.storeID }

// chkDir is the local copy of checkpoint id.
func (b *Backend[K]) chkDir(id checkpoint.ID) string {
	return filepath.Join(b.dir, "chk-"+strconv.FormatInt(int64(id), 10))
}

// IncrementalSnapshot is an incremental snapshot in progress.
type IncrementalSnapshot[K comparable] struct {
	b             *Backend[K]
	id            checkpoint.ID
	dir           string
	states        []checkpoint.StoreState
	timers        [2]state.Section // processing time, event time
	releaseTimers func()
	once          sync.Once
}

// IncrementalSnapshot is the synchronous part of incremental checkpoint
// id: a memtable flush, a Pebble checkpoint (hard links) and a
// copy-on-write capture of the timers. It blocks the task for one flush.
func (b *Backend[K]) IncrementalSnapshot(id checkpoint.ID) (*IncrementalSnapshot[K], error) {
	if len(b.pending) > 0 {
		return nil, fmt.Errorf("lsm state backend: incremental checkpoint %d: restored states %v are not registered", id, b.UnrestoredStates())
	}
	b.flushBuffer()
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("lsm state backend: incremental checkpoint %d: write buffered state: %w", id, err)
	}
	if err := b.db.Flush(); err != nil {
		return nil, fmt.Errorf("lsm state backend: incremental checkpoint %d: flush memtable: %w", id, err)
	}
	dir := b.chkDir(id)
	_ = os.RemoveAll(dir) // a leftover of an earlier attempt at this id
	if err := b.db.Checkpoint(dir); err != nil {
		return nil, fmt.Errorf("lsm state backend: incremental checkpoint %d: checkpoint store into %s: %w", id, dir, err)
	}
	s := &IncrementalSnapshot[K]{b: b, id: id, dir: dir}
	for name, r := range b.states {
		s.states = append(s.states, checkpoint.StoreState{Name: name, Kind: uint8(r.spec.Kind), ID: r.sid})
	}
	slices.SortFunc(s.states, func(a, c checkpoint.StoreState) int { return strings.Compare(a.Name, c.Name) })
	s.timers, s.releaseTimers = b.timerSections()
	b.live.Add(1)
	return s, nil
}

// isShared tells the immutable files of a store (SSTs, blob files), which
// go to the shared area, from those that change (MANIFEST, OPTIONS,
// markers), which are private to a checkpoint.
func isShared(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// Write is the asynchronous part: it uploads what is new and returns the
// handle. prefix makes the private files' names unique in the checkpoint's
// folder (the operator subtask's keyed file name). It may run once.
func (s *IncrementalSnapshot[K]) Write(ctx context.Context, w IncrementalWriter, prefix string) (*checkpoint.IncrementalKeyedStateHandle, error) {
	b := s.b
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("lsm state backend: list checkpoint %s: %w", s.dir, err)
	}
	h := &checkpoint.IncrementalKeyedStateHandle{
		KeyGroupStart: b.kgs.Start, KeyGroupEnd: b.kgs.End, StoreID: b.storeID, States: s.states,
	}
	for _, e := range ents {
		local := e.Name()
		if e.IsDir() {
			continue
		}
		if !isShared(local) {
			f, err := w.WriteFile(ctx, prefix+"-"+local, copyFrom(filepath.Join(s.dir, local)))
			if err != nil {
				return nil, err
			}
			h.Private = append(h.Private, checkpoint.PrivateStoreFile{Local: local, File: f})
			h.FullSize += f.Size
			h.UploadedSize += f.Size
			continue
		}
		b.inc.mu.Lock()
		ref, ok := b.inc.confirmed[local]
		b.inc.mu.Unlock()
		if !ok {
			name := checkpoint.SharedName(b.storeID, local)
			f, err := w.WriteSharedFile(ctx, name, copyFrom(filepath.Join(s.dir, local)))
			if err != nil {
				return nil, err
			}
			ref = checkpoint.SharedFileRef{Name: name, Size: f.Size, CRC32C: f.CRC32C, Local: local}
			h.UploadedSize += f.Size
		}
		h.FullSize += ref.Size
		h.Shared = append(h.Shared, ref)
	}
	// Both timer sets go into one canonical file, each in its own
	// section; a file written before event time holds only the first.
	if s.timers[0] != nil {
		var offsets []checkpoint.KeyGroupOffset
		f, err := w.WriteFile(ctx, prefix+"-timers", func(wr io.Writer) error {
			var err error
			offsets, err = state.WriteBlocks(wr, b.kgs, s.timers[:])
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(offsets) > 0 {
			h.Timers = &checkpoint.KeyedStateHandle{File: f, KeyGroups: offsets}
		}
		h.FullSize += f.Size
		h.UploadedSize += f.Size
	}
	b.inc.mu.Lock()
	b.inc.taken[s.id] = h.Shared
	b.inc.mu.Unlock()
	return h, nil
}

// Release ends the snapshot. The local copy stays until the checkpoint
// completed or was aborted (CheckpointComplete, CheckpointAborted).
func (s *IncrementalSnapshot[K]) Release() {
	s.once.Do(func() {
		s.releaseTimers()
		s.b.live.Add(-1)
	})
}

func copyFrom(path string) func(io.Writer) error {
	return func(w io.Writer) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	}
}

// CheckpointComplete confirms checkpoint id: its files need no upload any
// more. With local recovery its local copy is kept as the store's recovery
// copy; older local copies are removed.
func (b *Backend[K]) CheckpointComplete(id checkpoint.ID) error {
	b.inc.mu.Lock()
	refs, ok := b.inc.taken[id]
	var older []checkpoint.ID
	for c := range b.inc.taken {
		if c <= id {
			older = append(older, c)
			delete(b.inc.taken, c)
		}
	}
	// Only what the newest completed checkpoint references: a file
	// compacted away since need not be remembered. A completed checkpoint
	// that was not incremental (a savepoint) references no shared file, so
	// retention may delete every earlier upload: forget them all.
	b.inc.confirmed = make(map[string]checkpoint.SharedFileRef, len(refs))
	for _, r := range refs {
		b.inc.confirmed[r.Local] = r
	}
	b.inc.mu.Unlock()
	var errs []error
	if ok && b.opts.LocalRecoveryDir != "" {
		errs = append(errs, b.keepLocal(id, refs))
	}
	for _, c := range older {
		errs = append(errs, os.RemoveAll(b.chkDir(c)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lsm state backend: checkpoint %d complete: %w", id, err)
	}
	return nil
}

// CheckpointAborted removes the local copy of checkpoint id.
func (b *Backend[K]) CheckpointAborted(id checkpoint.ID) error {
	b.inc.mu.Lock()
	delete(b.inc.taken, id)
	b.inc.mu.Unlock()
	return os.RemoveAll(b.chkDir(id))
}
