package lsm

import (
	"testing"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// BenchmarkValueUpdate is the per-record cost of a keyed counter
// (SetCurrentKey through state.Backend, Value, Update) on the heap backend
// and on the LSM backend in the same run, over 1024 and 100k keys; the LSM
// store gets the default cache and memtable sizes. The heap figure is the
// baseline: the LSM backend pays a point read and a memtable write per
// record (with the default write buffer: a map lookup and an update in
// place, the state being far smaller than the buffer), for state that
// need not fit in memory.
func BenchmarkValueUpdate(b *testing.B) {
	for _, keys := range []int{1 << 10, 100_000} {
		for _, kind := range []string{"heap", "lsm"} {
			b.Run(kind+"/keys="+itoa(keys), func(b *testing.B) {
				var f *fixture
				if kind == "heap" {
					f = newHeap(b, fullRange)
				} else {
					f = newLSM(b, fullRange, func(o *Options) { o.MemtableSize, o.BlockCacheSize, o.WriteBufferSize = 0, 0, 0 })
				}
				f.register(b)
				kgs := make([]int, keys)
				for k := range keys {
					kgs[k] = keygroup.Of(f.hash(k), testMaxP)
					f.b.SetCurrentKey(k, kgs[k])
					f.val.Update(0)
				}
				var be state.Backend[int] = f.b
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					k := i % keys
					be.SetCurrentKey(k, kgs[k])
					v, _ := f.val.Value()
					f.val.Update(v + 1)
				}
				b.StopTimer()
				if err := be.Err(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkListAdd appends to a list per record: a blind merge in the
// LSM backend, no read of the list.
func BenchmarkListAdd(b *testing.B) {
	for _, kind := range []string{"heap", "lsm"} {
		b.Run(kind, func(b *testing.B) {
			var f *fixture
			if kind == "heap" {
				f = newHeap(b, fullRange)
			} else {
				f = newLSM(b, fullRange, func(o *Options) { o.MemtableSize, o.BlockCacheSize, o.WriteBufferSize = 0, 0, 0 })
			}
			f.register(b)
			const keys = 1 << 10
			b.ReportAllocs()
			for i := range b.N {
				f.set(i % keys)
				f.list.Add("event")
			}
		})
	}
}

func itoa(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return itoa(n/1000) + "k"
	}
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		if n /= 10; n == 0 {
			return s
		}
	}
}
