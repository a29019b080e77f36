package state

import (
	"context"
	"iter"

	"github.com/weirstream/weir/internal/keygroup"
)

// Backend is a keyed state backend: the keyed state and timers of one keyed
// operator subtask for the key groups of its range. The heap backend
// (*KeyedBackend) and the LSM backend (package lsm) implement it; states
// are registered on it with RegisterValue, RegisterList, RegisterMap and
// RegisterReducing, whatever the implementation.
//
// A Backend is used only from its task's goroutine; only a KeyedSnapshot's
// WriteBlocks runs elsewhere. The operator pays one interface call per
// record (SetCurrentKey); the state handles are interfaces already.
type Backend[K comparable] interface {
	// SetCurrentKey makes k, of key group kg, the key that states and
	// timers act on. It panics if kg is outside the backend's range: the
	// record was routed to the wrong subtask.
	SetCurrentKey(k K, kg int)
	// CurrentKey returns the key set by the last SetCurrentKey.
	CurrentKey() K
	// CurrentKeyGroup returns the key group set by the last SetCurrentKey.
	CurrentKeyGroup() int
	// KeyGroups returns the backend's key-group range.
	KeyGroups() keygroup.Range
	// Timers returns the backend's processing-time timers: PopDue is
	// given the processing time.
	Timers() *Timers[K]
	// EventTimers returns the backend's event-time timers, a set
	// independent of Timers with a snapshot section of its own: PopDue is
	// given the watermark.
	EventTimers() *Timers[K]
	// Restore loads the blocks of the backend's own key groups from
	// checkpoint files in the canonical format (see the package doc),
	// before the operator registers its states. Streamed sources are read
	// once each, a block at a time (ForEachBlock); ctx stops the reading.
	Restore(ctx context.Context, sources []RestoreSource) error
	// UnrestoredStates names, sorted, the restored states that were never
	// registered.
	UnrestoredStates() []string
	// DropUnrestored deletes the restored states that were never
	// registered, with their schema rows: restoring with
	// --allow-non-restored-state lets a program drop a state by no longer
	// registering it. Without it, the runtime refuses such a restore.
	DropUnrestored() error
	// Keys yields each key that has an entry in the registered state
	// called name, once, with its key group (nothing for an unknown name):
	// in key-group order, and within a group in the canonical order for
	// the LSM backend and in no particular order for the heap backend. The
	// state may be changed during the iteration; the keys it yields are
	// then those of some moment during it, as with a Go map.
	Keys(name string) iter.Seq2[K, int]
	// Snapshot captures the states and timers as of now, cheaply; the
	// returned snapshot is serialized later, on another goroutine.
	Snapshot() KeyedSnapshot
	// Err returns the first error a state access met (an I/O error of the
	// store, or stored bytes that do not decode), or nil. State handles
	// cannot return errors per call, so the operator checks Err after each
	// batch of records and timers and fails the task, before any output of
	// that batch leaves it, and after the function's Open, where a write
	// with no current key is refused (ErrNoCurrentKey). That refusal is
	// the heap backend's only failure.
	Err() error
	// Close releases the backend's resources (the LSM backend's files).
	// Call it after every snapshot was released.
	Close() error
}

// BackendConfig selects and sizes the keyed state backend of a job
// (state.backend.*). The zero value is the heap backend.
type BackendConfig struct {
	// Type is "heap" (or empty) or "lsm", as config.BackendHeap and
	// config.BackendLSM.
	Type string
	// LSM sizes the LSM backend.
	LSM LSMConfig
	// Incremental selects incremental checkpoints of the LSM backend
	// (state.backend.incremental); the heap backend ignores it.
	Incremental bool
	// LocalRecovery keeps the newest completed incremental checkpoint's
	// files on local disk for restores (state.backend.local-recovery).
	LocalRecovery bool
}

// LSMConfig is state.backend.lsm.*: where each task's store lives and how
// much memory it may use.
type LSMConfig struct {
	// Dir is the folder under which each task makes its own store; empty
	// is the system's temporary folder.
	Dir string
	// BlockCacheSize bounds the cache of uncompressed blocks, in bytes;
	// 0 takes the LSM backend's default.
	BlockCacheSize int64
	// MemtableSize is the size of one memtable, in bytes; 0 takes the
	// LSM backend's default.
	MemtableSize int64
	// WriteBufferSize bounds the cache of recently read and written
	// values in front of the store, in bytes; 0 takes the LSM backend's
	// default, a negative value turns it off.
	WriteBufferSize int64
}

var _ Backend[int] = (*KeyedBackend[int])(nil)
