package lsm

import (
	"fmt"
	"log/slog"

	"github.com/weirstream/weir/internal/state"
)

// Defaults of the memory options, per store (one store per keyed operator
// subtask).
const (
	DefaultBlockCacheSize = 64 << 20
	DefaultMemtableSize   = 16 << 20
	// DefaultWriteBufferSize is the write buffer's capacity (wbuf.go).
	// 128 MiB holds the issue-18 bench's 500 k entries of 100-byte values
	// per store: there the lsm/heap update ratio was 0.83 (64 MiB: 0.09,
	// about half the reads going to Pebble) and peak RSS lower (475 against
	// 510 MiB for two stores), as the block cache then stays cold.
	DefaultWriteBufferSize = 128 << 20
	// memtableStopWrites is how many memtables (the mutable one plus those
	// waiting for their flush) may exist before writes stall; with the
	// block cache it bounds the store's memory.
	memtableStopWrites = 2
	// minMemtableSize keeps Pebble's own lower bound and a sane flush size.
	minMemtableSize = 1 << 20
)

// Options configure one store.
type Options struct {
	// Dir is the folder under which the store makes its own directory,
	// removed again by Close; empty is os.TempDir().
	Dir string
	// Name goes into the store directory's name, to tell stores apart on
	// disk (operator uid and subtask); it need not be unique.
	Name string
	// BlockCacheSize is the block cache's capacity in bytes; 0 is
	// DefaultBlockCacheSize.
	BlockCacheSize int64
	// MemtableSize is one memtable's capacity in bytes; 0 is
	// DefaultMemtableSize. At most two exist at a time.
	MemtableSize int64
	// WriteBufferSize is the capacity in bytes of the write buffer, the
	// cache of recently read and written values in front of Pebble
	// (wbuf.go); 0 is DefaultWriteBufferSize, negative turns it off.
	WriteBufferSize int64
	// Logger receives the store's background errors; nil is silent.
	Logger *slog.Logger
	// LocalRecoveryDir, when set (state.backend.local-recovery), keeps the
	// SSTs of the newest completed incremental checkpoint in this folder
	// (hard links), so that a restore on this machine downloads only what
	// it does not find there. One folder per operator subtask.
	LocalRecoveryDir string
}

// FromConfig takes the sizes and folder of a job's state.backend.lsm.*.
func FromConfig(c state.LSMConfig, name string, logger *slog.Logger) Options {
	return Options{Dir: c.Dir, Name: name, BlockCacheSize: c.BlockCacheSize, MemtableSize: c.MemtableSize, WriteBufferSize: c.WriteBufferSize, Logger: logger}
}

// fill applies defaults and checks the values.
func (o *Options) fill() error {
	if o.BlockCacheSize == 0 {
		o.BlockCacheSize = DefaultBlockCacheSize
	}
	if o.MemtableSize == 0 {
		o.MemtableSize = DefaultMemtableSize
	}
	if o.WriteBufferSize == 0 {
		o.WriteBufferSize = DefaultWriteBufferSize
	}
	if o.BlockCacheSize < 0 {
		return fmt.Errorf("lsm state backend: block cache size %d is negative; set state.backend.lsm.block-cache-size to a size such as 64 mb", o.BlockCacheSize)
	}
	if o.MemtableSize < minMemtableSize || o.MemtableSize >= 4<<30 {
		return fmt.Errorf("lsm state backend: memtable size %d is outside [1 mb, 4 gb); set state.backend.lsm.memtable-size to a size such as 16 mb", o.MemtableSize)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// MemoryBound is the most memory the store's caches and memtables take:
// the block cache, every memtable that may exist at once (both outside the
// Go heap), and the write buffer with the value buffers its free slots
// keep for reuse (at most what one eviction round frees, a 16th of it).
// The write buffer lives in the Go heap, which the collector lets grow to
// twice its live bytes at the default GOGC=100, so it counts twice
// (measured: 1.8-1.9x its capacity in RSS). Iterators, Pebble's batches
// and the Go values of the task come on top.
func (o Options) MemoryBound() int64 {
	bc, mt, wb := o.BlockCacheSize, o.MemtableSize, o.WriteBufferSize
	if bc == 0 {
		bc = DefaultBlockCacheSize
	}
	if mt == 0 {
		mt = DefaultMemtableSize
	}
	switch {
	case wb == 0:
		wb = DefaultWriteBufferSize
	case wb < 0:
		wb = 0
	}
	return bc + memtableStopWrites*mt + 2*(wb+wb/16)
}
