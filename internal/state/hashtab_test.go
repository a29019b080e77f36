package state

import (
	"math/rand/v2"
	"testing"
)

// TestHashTabAgainstMap drives an htab and a Go map with the same random
// inserts, updates and deletes and compares them after every step. Weak
// hash functions make long probe runs, wrap-arounds at the table's end
// and the backward shift of deletes common.
func TestHashTabAgainstMap(t *testing.T) {
	hashes := map[string]func(int) uint32{
		"stable":   keyHasher[int](),
		"mod7":     func(k int) uint32 { return uint32(k % 7) },
		"constant": func(int) uint32 { return 42 },
		"identity": func(k int) uint32 { return uint32(k) },
	}
	for name, hash := range hashes {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(20) {
				rng := rand.New(rand.NewPCG(seed, 7))
				var tab htab[int, int]
				model := map[int]int{}
				keys := 1 + rng.IntN(300)
				for step := range 3000 {
					k := rng.IntN(keys)
					switch op := rng.IntN(10); {
					case op < 5:
						p, had := tab.slot(k, hash(k), hash)
						_, want := model[k]
						if had != want {
							t.Fatalf("seed %d step %d: slot(%d) had=%v, model %v", seed, step, k, had, want)
						}
						*p += step + 1
						model[k] += step + 1
					case op < 8:
						if got, want := tab.del(k, hash(k), hash), model[k] != 0; got != want {
							t.Fatalf("seed %d step %d: del(%d) = %v, model %v", seed, step, k, got, want)
						}
						delete(model, k)
					default:
						v, ok := tab.get(k, hash(k))
						if mv, mok := model[k]; ok != mok || v != mv {
							t.Fatalf("seed %d step %d: get(%d) = %d %v, model %d %v", seed, step, k, v, ok, mv, mok)
						}
					}
					if tab.n != len(model) {
						t.Fatalf("seed %d step %d: %d entries, model %d", seed, step, tab.n, len(model))
					}
				}
				seen := map[int]int{}
				tab.each(func(k, v int) bool { seen[k] = v; return true })
				if len(seen) != len(model) {
					t.Fatalf("seed %d: each saw %d entries, model %d", seed, len(seen), len(model))
				}
				for k, v := range model {
					if seen[k] != v {
						t.Fatalf("seed %d: key %d = %d, model %d", seed, k, seen[k], v)
					}
					if got, ok := tab.get(k, hash(k)); !ok || got != v {
						t.Fatalf("seed %d: get(%d) = %d %v, model %d", seed, k, got, ok, v)
					}
				}
				if tab.n*16 > len(tab.ctrl)*13 {
					t.Fatalf("seed %d: load %d/%d above 13/16", seed, tab.n, len(tab.ctrl))
				}
			}
		})
	}
}

// TestHashTabCloneIsIndependent: a clone (copy-on-write) changes neither
// way.
func TestHashTabCloneIsIndependent(t *testing.T) {
	hash := keyHasher[int]()
	var a htab[int, int]
	for k := range 100 {
		p, _ := a.slot(k, hash(k), hash)
		*p = k
	}
	b := a.clone()
	for k := range 50 {
		b.del(k, hash(k), hash)
		p, _ := b.slot(k+1000, hash(k+1000), hash)
		*p = -k
	}
	for k := range 100 {
		if v, ok := a.get(k, hash(k)); !ok || v != k {
			t.Fatalf("original lost key %d after the clone changed: %d %v", k, v, ok)
		}
	}
	if a.n != 100 || b.n != 100 {
		t.Fatalf("entries: original %d, clone %d; want 100 and 100", a.n, b.n)
	}
}

// BenchmarkHashTabSlot is a keyed counter's read-modify-write on one
// table against the same on a Go map, in the same run.
func BenchmarkHashTabSlot(b *testing.B) {
	const keys = 1 << 13
	hash := keyHasher[int]()
	b.Run("baseline=map", func(b *testing.B) {
		m := map[int]int64{}
		for i := range b.N {
			k := (i * 7919) & (keys - 1)
			m[k]++
		}
	})
	b.Run("htab", func(b *testing.B) {
		var t htab[int, int64]
		b.ReportAllocs()
		for i := range b.N {
			k := (i * 7919) & (keys - 1)
			p, _ := t.slot(k, hash(k), hash)
			*p++
		}
	})
}

// TestValueUpdateWritesWhereValueFound covers the read-modify-write
// shortcut of valueState: Update writes at the position Value found only
// while that position is the current key's, across a copy-on-write clone,
// and not after a Clear, a key change or an insert that grew the table.
func TestValueUpdateWritesWhereValueFound(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	f.set(1)
	f.val.Update(10)
	v, _ := f.val.Value()
	snap := f.b.Snapshot() // the next write clones key 1's group
	f.val.Update(v + 1)
	if got, _ := f.val.Value(); got != 11 {
		t.Fatalf("after the snapshot: %d, want 11", got)
	}
	restoredF := restored(t, fullRange, writeSnapshot(t, snap))
	snap.Release()
	restoredF.set(1)
	if got, _ := restoredF.val.Value(); got != 10 {
		t.Fatalf("snapshot holds %d for key 1, want 10 (the value before the snapshot)", got)
	}
	// Value, then Clear, then Update: the position is stale.
	f.val.Value()
	f.val.Clear()
	f.val.Update(3)
	if got, ok := f.val.Value(); !ok || got != 3 {
		t.Fatalf("update after clear: %d %v, want 3", got, ok)
	}
	// Value of key 1, then many inserts of other keys in the same group
	// (the table grows and entries move), then Update of key 1.
	f.val.Value()
	g := f.kg(1)
	for k := 2; k < 5000; k++ {
		if f.kg(k) == g {
			f.b.SetCurrentKeyHash(1, f.hash(1), g) // stay on key 1...
			f.b.SetCurrentKey(k, g)                // ...then insert k
			f.val.Update(int64(k))
		}
	}
	f.set(1)
	f.val.Value()
	f.set(2)
	f.set(1) // same key again: a new sequence, the position is re-found
	f.val.Update(7)
	if got, _ := f.val.Value(); got != 7 {
		t.Fatalf("key 1 after the inserts: %d, want 7", got)
	}
	for k := 2; k < 5000; k++ {
		if f.kg(k) == g {
			f.set(k)
			if got, _ := f.val.Value(); got != int64(k) {
				t.Fatalf("key %d: %d, want %d", k, got, k)
			}
		}
	}
}
