package lsm

import (
	"os"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// BenchmarkReadModifyWrite is one subtask of `weir bench state`'s compare
// run: keys keys of a 100-byte []byte value are loaded (blind writes, the
// rate reported as load-rec/s), then every iteration reads a
// pseudo-random key's value and writes a new one, with the default
// memory options, and with the write buffer off. Unlike
// BenchmarkValueUpdate the state (≈ 57 MiB at 500k keys) is most of the
// block cache, and every write lands in a memtable that flushes and
// compacts, as in a job. LSM_METRICS=1 logs Pebble's metrics at the end.
func BenchmarkReadModifyWrite(b *testing.B) {
	for _, wb := range []struct {
		name string
		size int64
	}{{"default", 0}, {"off", -1}} {
		b.Run("buffer="+wb.name, func(b *testing.B) { readModifyWrite(b, wb.size) })
	}
}

func readModifyWrite(b *testing.B, writeBuffer int64) {
	const keys = 500_000
	f := newLSM(b, fullRange, func(o *Options) {
		o.MemtableSize, o.BlockCacheSize, o.WriteBufferSize = 0, 0, writeBuffer
	})
	val, err := state.RegisterValue(f.b, "value", mustCodec[[]byte](b))
	if err != nil {
		b.Fatal(err)
	}
	kgs := make([]int, keys)
	for k := range keys {
		kgs[k] = keygroup.Of(f.hash(k), testMaxP)
	}
	t0 := time.Now()
	for k := range keys {
		f.b.SetCurrentKey(k, kgs[k])
		v := make([]byte, 100)
		fillRandom(v, uint64(k))
		val.Update(v)
	}
	b.ReportMetric(keys/time.Since(t0).Seconds(), "load-rec/s")
	const stride = 308_999 // coprime to keys: a permutation per pass
	b.ReportAllocs()
	b.ResetTimer()
	t1 := time.Now()
	for i := range b.N {
		k := int((uint64(i)*stride + 17) % keys)
		f.b.SetCurrentKey(k, kgs[k])
		v, ok := val.Value()
		if !ok || len(v) != 100 {
			b.Fatalf("key %d: %d bytes, found %v", k, len(v), ok)
		}
		w := make([]byte, 100)
		fillRandom(w, uint64(k)+uint64(i)<<32)
		val.Update(w)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(t1).Seconds(), "rmw/s")
	if err := f.b.Err(); err != nil {
		b.Fatal(err)
	}
	if os.Getenv("LSM_METRICS") != "" {
		b.Log(f.b.(*Backend[int]).db.Metrics().String())
	}
}

// fillRandom fills v with an xorshift stream seeded by seed, which block
// compression cannot shrink (as the bench's values).
func fillRandom(v []byte, seed uint64) {
	x := seed*0x9e3779b97f4a7c15 | 1
	for i := range v {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[i] = byte(x)
	}
}
