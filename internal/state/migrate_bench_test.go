package state

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/keygroup"
)

// migrateBenchKeys is the state size of BenchmarkRestoreMigrate: the
// issue's "restoring 2 M keys with a migration within 1.5× of restoring
// without".
const migrateBenchKeys = 2_000_000

// benchTotalV1 and benchTotalAdded are the two versions of the restored
// state's value (package lsm's evolve_test.go has the same pair).
type benchTotalV1 struct {
	User       string
	Count, Sum int64
}

type benchTotalAdded struct {
	User            string
	Count, Sum, Max int64
}

func benchTotal(k int) benchTotalV1 {
	return benchTotalV1{User: fmt.Sprintf("u%d", k), Count: int64(k), Sum: int64(k * 7)}
}

// BenchmarkRestoreMigrate restores a heap backend's value state of
// migrateBenchKeys keys holding benchTotalV1, snapshotted once (outside
// the timer), and times (ns/op) what a restored task does before its
// state is usable: SetKeyedSchemas, Restore and RegisterValue. "identical"
// registers benchTotalV1, "added-field" benchTotalAdded, whose values are
// decoded through codec.Resolve's decoder.
//
// Each added-field iteration also restores the identical case, untimed,
// before or after it (alternating between iterations and between -count
// runs), and reports that time (identical-ns/op) and the ratio of the two
// (added/identical), and the same for the process's CPU time (cpu-*: user
// and system time of all goroutines, the collector's included), which other
// work on the machine disturbs less than wall time.
func BenchmarkRestoreMigrate(b *testing.B) {
	if testing.Short() {
		b.Skip("restores 2 M keys: seconds per iteration")
	}
	w := newHeapMigrateWorld(b, migrateBenchKeys)
	b.Run("identical", func(b *testing.B) {
		var cpu time.Duration
		for range b.N {
			cpu += w.restore(b, false, true).cpu
		}
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
	b.Run("added-field", func(b *testing.B) {
		var added, same restoreTime
		for range b.N {
			w.flip = !w.flip
			if w.flip {
				same.add(w.restore(b, false, false))
			}
			added.add(w.restore(b, true, true))
			if !w.flip {
				same.add(w.restore(b, false, false))
			}
		}
		reportPair(b, added, same)
	})
}

// heapMigrateWorld is the canonical snapshot BenchmarkRestoreMigrate
// restores, and the state-table rows of the backend that wrote it.
type heapMigrateWorld struct {
	keys int
	hash func(int) uint32
	src  RestoreSource
	rows []checkpoint.StateSchema
	flip bool // identical restore first in the next added-field iteration
}

func newHeapMigrateWorld(b *testing.B, keys int) *heapMigrateWorld {
	b.Helper()
	h, err := keygroup.Hasher[int]()
	if err != nil {
		b.Fatal(err)
	}
	w := &heapMigrateWorld{keys: keys, hash: h}
	f := NewKeyedBackend(mustCodec[int](b), fullRange, testMaxP)
	val, err := RegisterValue(f, "total", mustCodec[benchTotalV1](b))
	if err != nil {
		b.Fatal(err)
	}
	for k := range keys {
		f.SetCurrentKey(k, keygroup.Of(h(k), testMaxP))
		val.Update(benchTotal(k))
	}
	w.src, w.rows = snapshotBytes(b, f), f.Schemas()
	b.Logf("%d keys: canonical snapshot %d MiB", keys, len(w.src.Data)>>20)
	return w
}

// restore returns how long a fresh backend took from SetKeyedSchemas to a
// registered state, with benchTotalAdded when added, else benchTotalV1;
// timed runs the benchmark's timer for that long, else it stays stopped.
// A few keys are checked afterwards.
func (w *heapMigrateWorld) restore(b *testing.B, added, timed bool) restoreTime {
	b.StopTimer()
	g := NewKeyedBackend(mustCodec[int](b), fullRange, testMaxP)
	runtime.GC() // the previous restore's backend is garbage
	start, cpu0 := time.Now(), cpuTime(b)
	if timed {
		b.StartTimer()
	}
	if err := SetKeyedSchemas(g, w.rows); err != nil {
		b.Fatal(err)
	}
	if err := g.Restore(b.Context(), []RestoreSource{w.src}); err != nil {
		b.Fatal(err)
	}
	var check func(k int) error
	if added {
		val, err := RegisterValue(g, "total", mustCodec[benchTotalAdded](b))
		if err != nil {
			b.Fatal(err)
		}
		check = func(k int) error {
			v := benchTotal(k)
			return checkValue(val, benchTotalAdded{User: v.User, Count: v.Count, Sum: v.Sum})
		}
	} else {
		val, err := RegisterValue(g, "total", mustCodec[benchTotalV1](b))
		if err != nil {
			b.Fatal(err)
		}
		check = func(k int) error { return checkValue(val, benchTotal(k)) }
	}
	b.StopTimer()
	d := restoreTime{wall: time.Since(start), cpu: cpuTime(b) - cpu0}
	for _, k := range []int{0, 1, w.keys / 2, w.keys - 1} {
		g.SetCurrentKey(k, keygroup.Of(w.hash(k), testMaxP))
		if err := check(k); err != nil {
			b.Fatalf("key %d: %v", k, err)
		}
	}
	return d
}

func checkValue[V comparable](s ValueState[V], want V) error {
	if v, ok := s.Value(); !ok || v != want {
		return fmt.Errorf("got %+v (%t), want %+v", v, ok, want)
	}
	return nil
}

// restoreTime is the wall and process CPU time of restores.
type restoreTime struct{ wall, cpu time.Duration }

func (t *restoreTime) add(u restoreTime) { t.wall += u.wall; t.cpu += u.cpu }

// reportPair reports the untimed identical restores of an added-field
// sub-benchmark, and the ratios of the added-field restores to them.
func reportPair(b *testing.B, added, same restoreTime) {
	n := float64(b.N)
	b.ReportMetric(float64(same.wall.Nanoseconds())/n, "identical-ns/op")
	b.ReportMetric(float64(added.wall)/float64(same.wall), "added/identical")
	b.ReportMetric(float64(added.cpu.Nanoseconds())/n, "cpu-ns/op")
	b.ReportMetric(float64(same.cpu.Nanoseconds())/n, "identical-cpu-ns/op")
	b.ReportMetric(float64(added.cpu)/float64(same.cpu), "cpu-added/identical")
}

// cpuTime is the user and system time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
