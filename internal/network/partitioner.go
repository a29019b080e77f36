package network

import (
	"fmt"

	"github.com/weirstream/weir/internal/keygroup"
)

// Partitioner decides which output channel (or channels) of a Writer receive
// a record. The set is closed: Forward, Rebalance, Hash, HashByKey, Broadcast
// and Custom. The Writer reads the strategy once at construction and runs a
// concrete per-record path for it (a switch on a small integer, no interface
// call per record); only Custom calls a user function to pick the channel.
type Partitioner[T any] interface {
	// String names the strategy as Flink does ("FORWARD", "HASH", ...).
	String() string
	strategy() strategy[T]
}

type mode uint8

const (
	modeForward mode = iota
	modeRebalance
	modeHash
	modeBroadcast
	modeCustom
)

// strategy is the concrete description a Writer specialises on.
type strategy[T any] struct {
	mode   mode
	name   string
	hash   func(T) uint32
	maxP   int
	custom func(r T, numChannels int) int
}

type partitioner[T any] struct{ s strategy[T] }

func (p partitioner[T]) String() string        { return p.s.name }
func (p partitioner[T]) strategy() strategy[T] { return p.s }

// Forward sends every record to the channel with the writer's own subtask
// index: the edge connects subtask i to subtask i only, as between chained
// operators of equal parallelism that run in different tasks.
func Forward[T any]() Partitioner[T] {
	return partitioner[T]{strategy[T]{mode: modeForward, name: "FORWARD"}}
}

// Rebalance spreads records round-robin over all channels, one batch-size
// chunk of records per channel in turn rather than one record per channel
// (a flush that sends a partial batch keeps the channel until its chunk is
// full, so a record's channel depends only on how many came before it;
// see Writer.SetRebalancePosition). Per chunk gives
// the same long-run balance, but a record is appended to the one open batch
// (no per-record index arithmetic or cache misses over n batches), a batch
// fills n times sooner (lower latency at low rates), and Flush and barriers
// send at most one partial batch instead of n. The first batch goes to the
// channel with the writer's own subtask index, so parallel producers start
// on different consumers.
func Rebalance[T any]() Partitioner[T] {
	return partitioner[T]{strategy[T]{mode: modeRebalance, name: "REBALANCE"}}
}

// Hash routes a record by key group: hash must be a stable hash of the
// record's key (see keygroup.Hasher); the record goes to the subtask owning
// keygroup.Of(hash(r), maxParallelism), the same assignment keyed state uses.
// maxParallelism must be at least the number of channels.
func Hash[T any](hash func(T) uint32, maxParallelism int) Partitioner[T] {
	return partitioner[T]{strategy[T]{mode: modeHash, name: "HASH", hash: hash, maxP: maxParallelism}}
}

// HashByKey is Hash with the stable hash of the key type K, which must be a
// string or integer kind or implement keygroup.Hashable.
func HashByKey[T any, K comparable](key func(T) K, maxParallelism int) (Partitioner[T], error) {
	h, err := keygroup.Hasher[K]()
	if err != nil {
		return nil, fmt.Errorf("hash partitioner: %w", err)
	}
	return Hash(func(r T) uint32 { return h(key(r)) }, maxParallelism), nil
}

// Broadcast sends every record to every channel.
func Broadcast[T any]() Partitioner[T] {
	return partitioner[T]{strategy[T]{mode: modeBroadcast, name: "BROADCAST"}}
}

// Custom routes each record to the channel pick returns, which must lie in
// [0, numChannels); Emit fails otherwise.
func Custom[T any](pick func(r T, numChannels int) int) Partitioner[T] {
	return partitioner[T]{strategy[T]{mode: modeCustom, name: "CUSTOM", custom: pick}}
}
