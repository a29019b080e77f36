package state

import (
	"testing"

	"github.com/weirstream/weir/internal/keygroup"
)

// BenchmarkValueStateUpdate is the per-record cost of a keyed counter:
// SetCurrentKey, Value and Update on int keys with int64 values. Expect 0
// allocs/op: the keys are already in the state.
func BenchmarkValueStateUpdate(b *testing.B) {
	f := newFixture(b, fullRange)
	f.register(b)
	const keys = 1024
	kgs := make([]int, keys)
	for k := range keys {
		kgs[k] = keygroup.Of(f.hash(k), testMaxP)
		f.b.SetCurrentKey(k, kgs[k])
		f.val.Update(0)
	}
	// Baseline in the same run: the same work on a plain map.
	plain := make(map[int]int64, keys)
	b.Run("baseline=map", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			k := i & (keys - 1)
			plain[k]++
		}
	})
	b.Run("backend", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			k := i & (keys - 1)
			f.b.SetCurrentKey(k, kgs[k])
			v, _ := f.val.Value()
			f.val.Update(v + 1)
		}
	})
	// As the keyed operator calls it: SetCurrentKey through the Backend
	// interface, one interface call per record more than "backend".
	var iface Backend[int] = f.b
	b.Run("backend=interface", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			k := i & (keys - 1)
			iface.SetCurrentKey(k, kgs[k])
			v, _ := f.val.Value()
			f.val.Update(v + 1)
		}
	})
}
