package weir

import (
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// SHIM until the timers branch merges: event timers not checkpointed.
func shimEventTimers[K comparable](b state.Backend[K], hash func(K) uint32, maxP int, kgs keygroup.Range) *state.Timers[K] {
	kc, _ := codec.For[K]()
	return state.NewTimers(kc, kgs, func() (K, int) {
		k := b.CurrentKey()
		return k, keygroup.Of(hash(k), maxP)
	}, b.SetCurrentKey)
}
