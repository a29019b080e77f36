package lsm

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/state"
)

var ttlSeed = flag.Uint64("ttlseed", 0, "seed of TestTTLRandomAgainstModel (0: a few fixed seeds)")

// ttlModel is the naive picture of TTL value, list and map state: every
// value with its stamp, expiry decided at read time.
type ttlModel struct {
	cfg  state.TTLConfig
	val  map[int][2]int64 // ts, value
	list map[int][][2]int64
	mp   map[int]map[int][2]int64
}

func (m *ttlModel) expired(ts, now int64) bool { return now-ts >= m.cfg.TTL.Milliseconds() }

func (m *ttlModel) readVal(k int, now int64) (int64, bool) {
	e, ok := m.val[k]
	if !ok {
		return 0, false
	}
	if m.expired(e[0], now) {
		delete(m.val, k)
		return e[1], m.cfg.Visibility == state.ReturnExpiredIfNotCleanedUp
	}
	if m.cfg.Update == state.UpdateOnReadAndWrite {
		m.val[k] = [2]int64{now, e[1]}
	}
	return e[1], true
}

func (m *ttlModel) readList(k int, now int64) []int64 {
	var out []int64
	var live [][2]int64
	for _, e := range m.list[k] {
		if m.expired(e[0], now) {
			if m.cfg.Visibility == state.ReturnExpiredIfNotCleanedUp {
				out = append(out, e[1])
			}
			continue
		}
		out = append(out, e[1])
		if m.cfg.Update == state.UpdateOnReadAndWrite {
			e[0] = now
		}
		live = append(live, e)
	}
	if len(live) == 0 {
		delete(m.list, k)
	} else {
		m.list[k] = live
	}
	return out
}

func (m *ttlModel) readMap(k, uk int, now int64) (int64, bool) {
	e, ok := m.mp[k][uk]
	if !ok {
		return 0, false
	}
	if m.expired(e[0], now) {
		delete(m.mp[k], uk)
		return e[1], m.cfg.Visibility == state.ReturnExpiredIfNotCleanedUp
	}
	if m.cfg.Update == state.UpdateOnReadAndWrite {
		m.mp[k][uk] = [2]int64{now, e[1]}
	}
	return e[1], true
}

// TestTTLRandomAgainstModel runs random writes, reads, clock steps and
// snapshot-restores on both backends and a naive model, for every update
// and visibility setting. Run one seed with -ttlseed.
func TestTTLRandomAgainstModel(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if *ttlSeed != 0 {
		seeds = []uint64{*ttlSeed}
	}
	for _, seed := range seeds {
		for _, upd := range []state.TTLUpdate{state.UpdateOnCreateAndWrite, state.UpdateOnReadAndWrite} {
			for _, vis := range []state.TTLVisibility{state.NeverReturnExpired, state.ReturnExpiredIfNotCleanedUp} {
				t.Run(fmt.Sprintf("seed=%d/update=%d/visibility=%d", seed, upd, vis), func(t *testing.T) {
					runTTLRandom(t, seed, state.TTLConfig{TTL: 50 * time.Millisecond, Update: upd, Visibility: vis})
				})
			}
		}
	}
}

func runTTLRandom(t *testing.T, seed uint64, cfg state.TTLConfig) {
	rng := rand.New(rand.NewPCG(seed, 7))
	fs := []*ttlFixture{newTTLFixture(t, ttlMakers[0], cfg), newTTLFixture(t, ttlMakers[1], cfg)}
	m := &ttlModel{cfg: cfg, val: map[int][2]int64{}, list: map[int][][2]int64{}, mp: map[int]map[int][2]int64{}}
	now := int64(0)
	for step := range 1000 {
		k, uk, x := rng.IntN(20), rng.IntN(4), rng.Int64N(1000)
		op := rng.IntN(9)
		switch op {
		case 0:
			m.val[k] = [2]int64{now, x}
		case 2:
			m.list[k] = append(m.list[k], [2]int64{now, x})
		case 4:
			if m.mp[k] == nil {
				m.mp[k] = map[int][2]int64{}
			}
			m.mp[k][uk] = [2]int64{now, x}
		case 6:
			now += rng.Int64N(30)
		}
		var wantV int64
		var wantOK bool
		var wantL []int64
		switch op {
		case 1:
			wantV, wantOK = m.readVal(k, now)
		case 3:
			wantL = m.readList(k, now)
		case 5:
			wantV, wantOK = m.readMap(k, uk, now)
		}
		for i, f := range fs {
			f.now = now
			f.set(k)
			switch op {
			case 0:
				f.val.Update(x)
			case 1:
				if v, ok := f.val.Value(); ok != wantOK || ok && v != wantV {
					t.Fatalf("step %d %s: value of %d = %d, %v; want %d, %v", step, f.name, k, v, ok, wantV, wantOK)
				}
			case 2:
				f.list.Add(fmt.Sprint(x))
			case 3:
				var got []int64
				for _, s := range f.list.Get() {
					var v int64
					fmt.Sscan(s, &v)
					got = append(got, v)
				}
				if !slices.Equal(got, wantL) {
					t.Fatalf("step %d %s: list of %d = %v, want %v", step, f.name, k, got, wantL)
				}
			case 4:
				f.mp.Put(fmt.Sprint(uk), int(x))
			case 5:
				if v, ok := f.mp.Get(fmt.Sprint(uk)); ok != wantOK || ok && int64(v) != wantV {
					t.Fatalf("step %d %s: map %d[%d] = %d, %v; want %d, %v", step, f.name, k, uk, v, ok, wantV, wantOK)
				}
			case 7:
				if i == 0 && x%4 == 0 {
					// Snapshot both at now; the bytes must agree, and each
					// backend continues from the other's snapshot.
					a, b := snapshotBytes(t, fs[0].b), snapshotBytes(t, fs[1].b)
					if !sameSource(a, b) {
						t.Fatalf("step %d: TTL snapshots differ", step)
					}
					fs[0] = newTTLFixture(t, ttlMakers[0], cfg, b)
					fs[1] = newTTLFixture(t, ttlMakers[1], cfg, a)
					// The snapshot dropped what expired: so does the model.
					for k, e := range m.val {
						if m.expired(e[0], now) {
							delete(m.val, k)
						}
					}
					for k, l := range m.list {
						l = slices.DeleteFunc(slices.Clone(l), func(e [2]int64) bool { return m.expired(e[0], now) })
						if len(l) == 0 {
							delete(m.list, k)
						} else {
							m.list[k] = l
						}
					}
					for _, mm := range m.mp {
						for uk, e := range mm {
							if m.expired(e[0], now) {
								delete(mm, uk)
							}
						}
					}
				}
			case 8:
				if f.b.Err() != nil {
					t.Fatal(f.b.Err())
				}
			}
		}
	}
}
