package lsm

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// migrateBenchKeys is the state size of BenchmarkRestoreMigrate: the
// issue's "restoring 2 M keys with a migration within 1.5× of restoring
// without".
const migrateBenchKeys = 2_000_000

// BenchmarkRestoreMigrate restores a value state of migrateBenchKeys keys
// holding totalV1, written once (outside the timer) by an LSM store, and
// times (ns/op) what a restored task does before its state is usable:
// SetKeyedSchemas, Restore (canonical) or RestoreIncremental (store files,
// linked from the local recovery folder), and RegisterValue. "identical"
// registers totalV1, "added-field" totalAdded (a field added), which
// converts every value: while ingesting the staged canonical payloads, or
// by the rewrite pass of migrate.go for linked store files.
//
// Each added-field iteration also restores the identical case, untimed,
// before or after it (alternating between iterations and between -count
// runs), and reports that time (identical-ns/op) and the ratio of the two
// (added/identical), and the same for the process's CPU time (cpu-*: user
// and system time of all goroutines, Pebble's included). Ratios of
// back-to-back restores are disturbed less by the noise of a shared
// machine than two sub-benchmarks' ns/op, and CPU time less than wall
// time.
func BenchmarkRestoreMigrate(b *testing.B) {
	if testing.Short() {
		b.Skip("restores 2 M keys: seconds per iteration")
	}
	w := newMigrateWorld(b, migrateBenchKeys)
	for _, mode := range []string{"canonical", "incremental"} {
		restore := w.restoreCanonical
		if mode == "incremental" {
			restore = w.restoreIncremental
		}
		b.Run(mode+"/identical", func(b *testing.B) {
			var cpu time.Duration
			for range b.N {
				cpu += restore(b, false, true).cpu
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		b.Run(mode+"/added-field", func(b *testing.B) {
			var added, same restoreTime
			for range b.N {
				w.flip = !w.flip
				if w.flip {
					same.add(restore(b, false, false))
				}
				added.add(restore(b, true, true))
				if !w.flip {
					same.add(restore(b, false, false))
				}
			}
			reportPair(b, added, same)
		})
	}
}

// migrateWorld is the checkpoint BenchmarkRestoreMigrate restores: one
// LSM store's state of totalV1 values, as a canonical snapshot and as an
// incremental checkpoint whose files stay in a local recovery folder.
type migrateWorld struct {
	keys  int
	hash  func(int) uint32
	dir   string // stores of the restores under test
	local string // local recovery folder
	src   state.RestoreSource
	rows  []checkpoint.StateSchema
	inc   IncrementalSource
	flip  bool // identical restore first in the next added-field iteration
}

func newMigrateWorld(b *testing.B, keys int) *migrateWorld {
	b.Helper()
	root := b.TempDir()
	w := &migrateWorld{keys: keys, hash: hasher(b), dir: filepath.Join(root, "stores"), local: filepath.Join(root, "local")}
	f, err := Open(mustCodec[int](b), fullRange, testMaxP, Options{Dir: root, Name: "source", LocalRecoveryDir: w.local})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}()
	val, err := state.RegisterValue(f, "total", mustCodec[totalV1](b))
	if err != nil {
		b.Fatal(err)
	}
	for k := range keys {
		f.SetCurrentKey(k, keygroup.Of(w.hash(k), testMaxP))
		val.Update(v1Total(k))
	}
	if err := f.Err(); err != nil {
		b.Fatal(err)
	}
	w.src, w.rows = snapshotBytes(b, f), f.Schemas()

	fs, err := storage.Open(filepath.Join(root, "storage"), "job")
	if err != nil {
		b.Fatal(err)
	}
	s, err := f.IncrementalSnapshot(1)
	if err != nil {
		b.Fatal(err)
	}
	h, err := s.Write(context.Background(), chkWriter{fs, 1}, "op-0")
	s.Release()
	if err != nil {
		b.Fatal(err)
	}
	if err := f.CheckpointComplete(1); err != nil {
		b.Fatal(err)
	}
	w.inc = IncrementalSource{Handle: h, Files: fs}
	b.Logf("%d keys: canonical snapshot %d MiB, incremental checkpoint %d MiB in %d SSTs", keys, len(w.src.Data)>>20, h.FullSize>>20, len(h.Shared))
	return w
}

// restoreCanonical times SetKeyedSchemas, Restore and RegisterValue of a
// fresh store from the canonical snapshot, with totalAdded when added,
// else totalV1, and checks a few keys (untimed).
func (w *migrateWorld) restoreCanonical(b *testing.B, added, timed bool) restoreTime {
	return w.restoreWith(b, added, timed, func(g *Backend[int]) error {
		return g.Restore(b.Context(), []state.RestoreSource{w.src})
	})
}

// restoreIncremental is restoreCanonical from the incremental checkpoint:
// its files are linked from the local recovery folder.
func (w *migrateWorld) restoreIncremental(b *testing.B, added, timed bool) restoreTime {
	return w.restoreWith(b, added, timed, func(g *Backend[int]) error {
		st, err := g.RestoreIncremental(b.Context(), []IncrementalSource{w.inc}, true)
		if err == nil && st.Downloaded != 0 {
			err = fmt.Errorf("restore downloaded %d bytes; want every file linked", st.Downloaded)
		}
		return err
	})
}

// restoreWith opens a fresh store and returns how long it took from
// SetKeyedSchemas to a registered state; timed runs the benchmark's timer
// for that long, else it stays stopped.
func (w *migrateWorld) restoreWith(b *testing.B, added, timed bool, restore func(*Backend[int]) error) restoreTime {
	b.StopTimer()
	g, err := Open(mustCodec[int](b), fullRange, testMaxP, Options{Dir: w.dir, Name: "restored", LocalRecoveryDir: w.local})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		b.StopTimer()
		if err := g.Close(); err != nil {
			b.Error(err)
		}
	}()
	runtime.GC()
	start, cpu0 := time.Now(), cpuTime(b)
	if timed {
		b.StartTimer()
	}
	if err := state.SetKeyedSchemas(g, w.rows); err != nil {
		b.Fatal(err)
	}
	if err := restore(g); err != nil {
		b.Fatal(err)
	}
	var check func(k int) error
	if added {
		val, err := state.RegisterValue(g, "total", mustCodec[totalAdded](b))
		if err != nil {
			b.Fatal(err)
		}
		check = func(k int) error { return checkMigrated(val, addedField(v1Total(k))) }
	} else {
		val, err := state.RegisterValue(g, "total", mustCodec[totalV1](b))
		if err != nil {
			b.Fatal(err)
		}
		check = func(k int) error { return checkMigrated(val, v1Total(k)) }
	}
	b.StopTimer()
	d := restoreTime{wall: time.Since(start), cpu: cpuTime(b) - cpu0}
	for _, k := range []int{0, 1, w.keys / 2, w.keys - 1} {
		g.SetCurrentKey(k, keygroup.Of(w.hash(k), testMaxP))
		if err := check(k); err != nil {
			b.Fatalf("key %d: %v", k, err)
		}
	}
	if err := g.Err(); err != nil {
		b.Fatal(err)
	}
	return d
}

func checkMigrated[V comparable](s state.ValueState[V], want V) error {
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
