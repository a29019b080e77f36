package lsm

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// ttlFixture is a backend with one TTL state of every kind and a clock the
// test moves.
type ttlFixture struct {
	*fixture
	now  int64
	val  state.ValueState[int64]
	list state.ListState[string]
	mp   state.MapState[string, int]
	sum  state.ReducingState[int64]
}

type ttlMaker struct {
	name string
	mk   func(testing.TB, keygroup.Range, ...func(*Options)) *fixture
}

var ttlMakers = []ttlMaker{{"heap", heapMaker}, {"lsm", newLSM}}

func newTTLFixture(t testing.TB, m ttlMaker, cfg state.TTLConfig, srcs ...state.RestoreSource) *ttlFixture {
	t.Helper()
	f := &ttlFixture{fixture: m.mk(t, fullRange)}
	f.b.(interface{ SetTTLClock(func() int64) }).SetTTLClock(func() int64 { return f.now })
	if len(srcs) > 0 {
		if err := f.b.Restore(t.Context(), srcs); err != nil {
			t.Fatal(err)
		}
	}
	o := state.WithTTL(cfg)
	var err error
	if f.val, err = state.RegisterValue(f.b, "val", mustCodec[int64](t), o); err != nil {
		t.Fatal(err)
	}
	if f.list, err = state.RegisterList(f.b, "list", mustCodec[string](t), o); err != nil {
		t.Fatal(err)
	}
	if f.mp, err = state.RegisterMap(f.b, "map", mustCodec[string](t), mustCodec[int](t), o); err != nil {
		t.Fatal(err)
	}
	if f.sum, err = state.RegisterReducing(f.b, "sum", func(a, b int64) int64 { return a + b }, mustCodec[int64](t), o); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestTTLExpiryOnWrite(t *testing.T) {
	for _, m := range ttlMakers {
		t.Run(m.name, func(t *testing.T) {
			f := newTTLFixture(t, m, state.TTLConfig{TTL: 100 * time.Millisecond})
			f.now = 1000
			f.set(1)
			f.val.Update(7)
			f.list.Add("a")
			f.mp.Put("x", 1)
			f.sum.Add(5)
			f.now = 1050
			f.list.Add("b") // elements expire one by one
			f.mp.Put("y", 2)
			f.sum.Add(1) // renews the reduced value
			if v, ok := f.val.Value(); !ok || v != 7 {
				t.Fatalf("value before expiry: %d, %v", v, ok)
			}
			f.now = 1099
			if v, ok := f.val.Value(); !ok || v != 7 { // reads do not renew
				t.Fatalf("value at 99ms: %d, %v", v, ok)
			}
			f.now = 1100
			if _, ok := f.val.Value(); ok {
				t.Fatal("value returned at its expiry")
			}
			if got := f.list.Get(); !reflect.DeepEqual(got, []string{"b"}) {
				t.Fatalf("list %v, want [b]", got)
			}
			if _, ok := f.mp.Get("x"); ok || f.mp.Len() != 1 || !f.mp.Contains("y") {
				t.Fatalf("map: x expired, y live; Len %d", f.mp.Len())
			}
			if v, ok := f.sum.Get(); !ok || v != 6 {
				t.Fatalf("sum %d, %v; want 6", v, ok)
			}
			f.now = 1150
			if f.list.Get() != nil || f.mp.Len() != 0 {
				t.Fatal("list or map entries left after expiry")
			}
			f.sum.Add(3) // the expired 6, not read since, is not folded in
			if v, _ := f.sum.Get(); v != 3 {
				t.Fatalf("sum after expiry and Add = %d, want 3", v)
			}
			f.now = 1300
			if _, ok := f.sum.Get(); ok {
				t.Fatal("sum returned after expiry")
			}
			if err := f.b.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTTLUpdateOnReadAndVisibility(t *testing.T) {
	for _, m := range ttlMakers {
		t.Run(m.name, func(t *testing.T) {
			f := newTTLFixture(t, m, state.TTLConfig{TTL: 100 * time.Millisecond, Update: state.UpdateOnReadAndWrite})
			f.set(1)
			f.val.Update(1)
			f.mp.Put("x", 1)
			f.list.Add("a")
			for f.now = 90; f.now < 1000; f.now += 90 { // each read renews
				if _, ok := f.val.Value(); !ok {
					t.Fatalf("value expired at %d despite reads", f.now)
				}
				if _, ok := f.mp.Get("x"); !ok {
					t.Fatalf("map entry expired at %d despite reads", f.now)
				}
				if f.list.Get() == nil {
					t.Fatalf("list expired at %d despite reads", f.now)
				}
			}
			g := newTTLFixture(t, m, state.TTLConfig{TTL: 100 * time.Millisecond, Visibility: state.ReturnExpiredIfNotCleanedUp})
			g.set(2)
			g.val.Update(5)
			g.now = 500
			if v, ok := g.val.Value(); !ok || v != 5 {
				t.Fatalf("ReturnExpiredIfNotCleanedUp: first read %d, %v; want the expired 5", v, ok)
			}
			if _, ok := g.val.Value(); ok {
				t.Fatal("ReturnExpiredIfNotCleanedUp: the read did not clean the value up")
			}
		})
	}
}

// TestTTLRestoreKeepsTimestamps: a checkpoint holds the last-access times,
// so a value restored into either backend expires when it would have.
func TestTTLRestoreKeepsTimestamps(t *testing.T) {
	cfg := state.TTLConfig{TTL: 100 * time.Millisecond}
	for _, from := range ttlMakers {
		for _, to := range ttlMakers {
			t.Run(from.name+"-to-"+to.name, func(t *testing.T) {
				f := newTTLFixture(t, from, cfg)
				f.now = 1000
				f.set(1)
				f.val.Update(1)
				f.list.Add("old")
				f.mp.Put("old", 1)
				f.now = 1060
				f.list.Add("new")
				f.mp.Put("new", 2)
				src := snapshotBytes(t, f.b)
				g := newTTLFixture(t, to, cfg, src)
				g.now = 1099
				g.set(1)
				if _, ok := g.val.Value(); !ok {
					t.Fatal("restored value expired early")
				}
				g.now = 1100
				if _, ok := g.val.Value(); ok {
					t.Fatal("restored value outlived its TTL: timestamp not kept")
				}
				if got := g.list.Get(); !reflect.DeepEqual(got, []string{"new"}) {
					t.Fatalf("restored list %v, want [new]", got)
				}
				if got := slices.Collect(func(yield func(string) bool) {
					for k := range g.mp.All() {
						if !yield(k) {
							return
						}
					}
				}); !reflect.DeepEqual(got, []string{"new"}) {
					t.Fatalf("restored map keys %v, want [new]", got)
				}
			})
		}
	}
}

// TestTTLRestoreMismatch: TTL and non-TTL are different kinds in
// checkpoints; restoring one as the other names the state.
func TestTTLRestoreMismatch(t *testing.T) {
	for _, m := range ttlMakers {
		t.Run(m.name, func(t *testing.T) {
			plain := m.mk(t, fullRange)
			plain.register(t)
			plain.set(1)
			plain.val.Update(1)
			f := newTTLFixture(t, m, state.TTLConfig{TTL: time.Second})
			f.set(1)
			f.val.Update(1)
			for _, c := range []struct {
				src   state.RestoreSource
				toTTL bool
			}{{snapshotBytes(t, plain.b), true}, {snapshotBytes(t, f.b), false}} {
				g := m.mk(t, fullRange)
				g.b.(interface{ SetTTLClock(func() int64) }).SetTTLClock(func() int64 { return 0 })
				err := g.b.Restore(t.Context(), []state.RestoreSource{c.src})
				if err == nil {
					var opts []state.RegisterOption
					if c.toTTL {
						opts = append(opts, state.WithTTL(state.TTLConfig{TTL: time.Second}))
					}
					_, err = state.RegisterValue(g.b, "val", mustCodec[int64](t), opts...)
				}
				if !errors.Is(err, state.ErrStateMismatch) || !strings.Contains(err.Error(), `"val"`) || !strings.Contains(err.Error(), "TTL") {
					t.Fatalf("toTTL=%v: err = %v; want a mismatch naming \"val\" and TTL", c.toTTL, err)
				}
			}
		})
	}
}

func TestTTLNeedsAClock(t *testing.T) {
	for _, m := range ttlMakers {
		f := m.mk(t, fullRange)
		_, err := state.RegisterValue(f.b, "v", mustCodec[int64](t), state.WithTTL(state.TTLConfig{TTL: time.Second}))
		if err == nil || !strings.Contains(err.Error(), "SetTTLClock") {
			t.Fatalf("%s: err = %v; want one naming SetTTLClock", m.name, err)
		}
	}
}

// TestTTLSnapshotCleanup: full snapshots of both backends leave out what
// expired by the snapshot's time, per value, list element and map entry,
// and give the same bytes. Restoring with the clock turned back (nothing
// expires on read) shows exactly what a snapshot holds.
func TestTTLSnapshotCleanup(t *testing.T) {
	cfg := state.TTLConfig{TTL: 100 * time.Millisecond}
	var srcs []state.RestoreSource
	for _, m := range ttlMakers {
		f := newTTLFixture(t, m, cfg)
		f.now = 1000
		for k := range 40 {
			f.set(k)
			f.val.Update(int64(k))
			f.list.Add("old")
			f.mp.Put("old", k)
			f.sum.Add(1)
		}
		f.now = 1060
		for k := range 40 {
			f.set(k)
			if k%2 == 0 {
				f.val.Update(int64(-k))
				f.list.Add("new")
				f.mp.Put("new", k)
			}
		}
		f.now = 1100 // the first writes expired, unread
		src := snapshotBytes(t, f.b)
		srcs = append(srcs, src)
		for _, to := range ttlMakers {
			g := newTTLFixture(t, to, cfg, src)
			g.now = 0
			for k := range 40 {
				g.set(k)
				v, ok := g.val.Value()
				l := g.list.Get()
				_, oldOK := g.mp.Get("old")
				_, sumOK := g.sum.Get()
				if oldOK || sumOK {
					t.Fatalf("%s to %s: key %d: snapshot holds expired map entry or sum", m.name, to.name, k)
				}
				if k%2 == 0 {
					if !ok || v != int64(-k) || !reflect.DeepEqual(l, []string{"new"}) || g.mp.Len() != 1 {
						t.Fatalf("%s to %s: key %d: value %d %v, list %v, map len %d; want the live ones only", m.name, to.name, k, v, ok, l, g.mp.Len())
					}
				} else if ok || l != nil || g.mp.Len() != 0 {
					t.Fatalf("%s to %s: key %d: snapshot holds expired state", m.name, to.name, k)
				}
			}
		}
	}
	if !sameSource(srcs[0], srcs[1]) {
		t.Fatalf("TTL snapshots differ:\nheap %x\nlsm  %x", srcs[0].Data, srcs[1].Data)
	}
	// Everything expired: no key-group block at all.
	for _, m := range ttlMakers {
		f := newTTLFixture(t, m, cfg)
		for k := range 10 {
			f.set(k)
			f.val.Update(1)
			f.list.Add("x")
			f.mp.Put("x", 1)
			f.sum.Add(1)
		}
		f.now = 100
		if src := snapshotBytes(t, f.b); len(src.KeyGroups) != 0 {
			t.Fatalf("%s: snapshot of expired state has %d blocks", m.name, len(src.KeyGroups))
		}
	}
}

func ttlConfigOf(d time.Duration) state.TTLConfig { return state.TTLConfig{TTL: d} }
